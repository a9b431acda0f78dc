"""PreBind of DynamicResources (bindClaim and the binding-conditions wait) and the readiness
checks Filter shares with it: what upstream's PreBind, isClaimReadyForBinding,
isClaimTimeout and isPodReadyForBinding do, with their messages."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from scheduler.framework import Code, DRAManager, Handle, Pod, ResourceClaim, Status
from scheduler.plugins.dynamic_resources.claims import consumer, is_reserved_for_pod

#: Upstream polls binding conditions every 5 s.
POLL_INTERVAL = 5.0


class BindingFailedError(Exception):
    """ErrDeviceBindingFailed: a driver set a binding failure condition."""


class BindingTimeoutError(Exception):
    """ErrDeviceBindingTimeout: binding conditions not met within bindingTimeout."""


def _results(claim: ResourceClaim) -> list[Mapping[str, Any]]:
    allocation = claim.allocation or {}
    return list((allocation.get("devices") or {}).get("results") or ())


def _device_conditions(
    claim: ResourceClaim, result: Mapping[str, Any]
) -> dict[str, Mapping[str, Any]] | None:
    """The conditions (by type) of the device status matching the result, if any."""
    for device in claim.devices:
        if (device.get("driver"), device.get("pool"), device.get("device")) == (
            result.get("driver"),
            result.get("pool"),
            result.get("device"),
        ):
            return {c.get("type", ""): c for c in device.get("conditions") or ()}
    return None


def claim_ready(claim: ResourceClaim) -> bool:
    """isClaimReadyForBinding: every binding condition True; raises BindingFailedError when
    a failure condition is True."""
    if claim.allocation is None:
        return False
    for result in _results(claim):
        wanted = result.get("bindingConditions") or ()
        if not wanted:
            continue
        conditions = _device_conditions(claim, result)
        if conditions is None:
            return False
        for failure in result.get("bindingFailureConditions") or ():
            cond = conditions.get(failure) or {}
            if cond.get("status") == "True":
                message = str(cond.get("message", "")).replace('"', '\\"')
                raise BindingFailedError(
                    f"device binding failed: claim={claim.name}, "
                    f'reason={cond.get("reason", "")}, message="{message}"'
                )
        if any((conditions.get(c) or {}).get("status") != "True" for c in wanted):
            return False
    return True


def _allocated_at(claim: ResourceClaim) -> float | None:
    raw = (claim.allocation or {}).get("allocationTimestamp")
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw).timestamp()
    except ValueError:
        return None


class ClaimBinder:
    """Writes Reserve's allocations and the pod's reservations (through the Handle's API
    calls) and waits for binding conditions."""

    def __init__(
        self, handle: Handle, dra: DRAManager, binding_timeout: float, binding_conditions: bool
    ) -> None:
        self.handle = handle
        self.dra = dra
        self.binding_timeout = binding_timeout
        #: DRADeviceBindingConditions and DRAResourceClaimDeviceStatus: without them no
        #: allocation time is written, nothing is waited for and no binding blocks a claim.
        self.binding_conditions = binding_conditions
        self._stop = threading.Event()

    def timed_out(self, claim: ResourceClaim) -> bool:
        """isClaimTimeout: a device with binding conditions allocated longer ago than
        bindingTimeout."""
        allocated_at = _allocated_at(claim)
        if allocated_at is None:
            return False
        with_conditions = any(r.get("bindingConditions") for r in _results(claim))
        return with_conditions and allocated_at + self.binding_timeout < time.time()

    def blocked(self, claim: ResourceClaim) -> bool:
        """Filter's check of an allocated claim: its binding failed or timed out (PostFilter
        may then deallocate it)."""
        if not self.binding_conditions:
            return False
        try:
            ready = claim_ready(claim)
        except BindingFailedError:
            return True
        return not ready and self.timed_out(claim)

    def unreserve(self, pod: Pod, claim: ResourceClaim) -> None:
        """Unreserve's patch; a failure is left for the next attempt, as upstream."""
        # Upstream logs the error and goes on: the next attempt retries.
        with contextlib.suppress(Exception):
            self.handle.api.unreserve_resource_claim(claim, pod.uid)

    def pre_bind(
        self,
        pod: Pod,
        node_name: str,
        claims: list[ResourceClaim],
        allocations: Sequence[Mapping[str, Any] | None],
    ) -> Status | None:
        """bindClaim for each claim not reserved for the pod yet; on success the in-flight
        allocations are dropped (the written claims are assumed meanwhile), then the wait for
        binding conditions when an allocated device has any."""
        written: list[str] = []
        for index, claim in enumerate(claims):
            if is_reserved_for_pod(pod, claim):
                continue
            allocation = allocations[index]
            try:
                updated = self.handle.api.reserve_resource_claim(
                    claim, allocation, consumer(pod), allocation_timestamp=self.binding_conditions
                )
            except Exception as err:
                return Status.as_error(err)
            self.dra.claims.assume_after_api_call(updated)
            claims[index] = updated
            if allocation is not None:
                written.append(claim.uid)
        for uid in written:
            self.dra.claims.maybe_remove_pending_allocation(uid, force=True)
        if not self.binding_conditions:
            return None
        if not any(r.get("bindingConditions") for c in claims for r in _results(c)):
            return None
        self.handle.event_recorder.eventf(
            pod,
            None,
            "Normal",
            "BindingConditionsPending",
            "Scheduling",
            f"waiting for binding conditions for device on node {node_name}",
        )
        try:
            self._wait_ready(claims)
        except (BindingFailedError, BindingTimeoutError, LookupError) as err:
            return Status(Code.ERROR, str(err))
        return None

    def _wait_ready(self, claims: list[ResourceClaim]) -> None:
        """Polls the claims (immediately, then every POLL_INTERVAL) until all are ready, up to
        bindingTimeout."""
        deadline = time.monotonic() + self.binding_timeout
        while True:
            if self._ready(claims):
                return
            left = deadline - time.monotonic()
            if left <= 0 or self._stop.wait(min(POLL_INTERVAL, left)):
                raise BindingTimeoutError("device binding timeout: context deadline exceeded")

    def _ready(self, claims: list[ResourceClaim]) -> bool:
        for index, claim in enumerate(claims):
            current = self.dra.claims.get(claim.namespace, claim.name)
            claims[index] = current
            if not claim_ready(current):
                if self.timed_out(current):
                    raise BindingTimeoutError(f"device binding timeout: claim={current.name}")
                return False
        return True

    def close(self) -> None:
        """Ends binding-condition waits (the scheduler is stopping)."""
        self._stop.set()
