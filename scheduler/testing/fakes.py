"""In-memory stand-ins for what the framework gives plugins: API calls, events, the nominator.

They implement the Protocols in `scheduler.framework.interface` (`ApiActions`, `EventRecorder`,
`PodNominator`) and record every call, so a test asserts on what a plugin or the scheduler
*would* have sent to the API server. All three are thread-safe enough for the in-process
scheduler: binding and API-dispatcher threads write while the test thread waits.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from scheduler.api.dra import ResourceClaim, parse_resource_claim
from scheduler.api.gang import Gang
from scheduler.api.json_types import Json
from scheduler.api.objects import Pod
from scheduler.framework.nominations import Nominations


@dataclass
class FakeApi:
    """Records binds, status patches and deletes in the order the API server would apply them.

    * `binds`: pod key -> node; `status_patches`: (pod key, patch); `deletes`: pod keys;
      `pod_group_patches`: (PodGroup key, podgroups/status patch);
      `writes`: ("bind" | "patch" | "delete" | "podgroup-patch", key) in order.
    * Failures: `fail_with` makes every call raise it; `fail_binds` makes binds raise
      "apiserver said no"; `fail_deletes` makes deletes raise it.
    * `hold_patches`: while it is an unset Event, status patches start (recorded in
      `patches_started`) and then wait for it, as a slow API server would make them.
    * `volume_updates` / `claim_updates`: the PersistentVolume / PersistentVolumeClaim objects
      PUT, in order (writes "volume" / "claim" with the object's name); each returns the object
      with its resourceVersion incremented, as the API server would.
    * `resource_claim_writes`: ("reserve" | "unreserve" | "deallocate" | "create" | "delete",
      claim key, detail) of DynamicResources' claim writes, in order (writes kind
      "resourceclaim"); a reserve returns the claim with the allocation and consumer applied
      and its resourceVersion incremented; a create names the claim from its generateName
      and a counter.
    * `wait_for(predicate)` blocks until a write makes `predicate()` true (no sleeping).
    """

    binds: dict[str, str] = field(default_factory=dict)
    status_patches: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    pod_group_patches: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    volume_updates: list[Json] = field(default_factory=list)
    claim_updates: list[Json] = field(default_factory=list)
    resource_claim_writes: list[tuple[str, str, Any]] = field(default_factory=list)
    created_claims: int = 0
    fail_with: Exception | None = None
    fail_binds: bool = False
    fail_deletes: Exception | None = None
    hold_patches: threading.Event | None = None
    patches_started: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def _write(self, kind: str, key: str, apply: Callable[[], None]) -> None:
        """Applies one write and logs it atomically, so a waiter never sees half of it."""
        with self.changed:
            apply()
            self.writes.append((kind, key))
            self.changed.notify_all()

    def bind(self, pod: Pod, node_name: str) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        if self.fail_binds:
            raise RuntimeError("apiserver said no")
        self._write("bind", pod.key, lambda: self.binds.__setitem__(pod.key, node_name))

    def delete_pod(self, pod: Pod, grace_period_seconds: int | None = None) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        if self.fail_deletes is not None:
            raise self.fail_deletes
        self._write("delete", pod.key, lambda: self.deletes.append(pod.key))

    def patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        with self.changed:
            self.patches_started.append(pod.key)
            self.changed.notify_all()
        hold = self.hold_patches
        if hold is not None and not hold.wait(timeout=30):
            raise AssertionError("a held status patch was never released")
        self._write("patch", pod.key, lambda: self.status_patches.append((pod.key, patch)))

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        key = f"{namespace}/{name}"
        self._write("podgroup-patch", key, lambda: self.pod_group_patches.append((key, patch)))

    def update_persistent_volume(self, volume: Json) -> Json:
        return self._update("volume", self.volume_updates, volume)

    def update_persistent_volume_claim(self, claim: Json) -> Json:
        return self._update("claim", self.claim_updates, claim)

    def reserve_resource_claim(
        self,
        claim: ResourceClaim,
        allocation: Mapping[str, Any] | None,
        consumer: Mapping[str, Any],
        allocation_timestamp: bool,
    ) -> ResourceClaim:
        if self.fail_with is not None:
            raise self.fail_with
        stored = dataclasses.replace(
            claim,
            resource_version=str(int(claim.resource_version or 0) + 1),
            allocation=allocation if allocation is not None else claim.allocation,
            reserved_for=(*claim.reserved_for, dict(consumer)),
        )
        entry = ("reserve", claim.key, (allocation, dict(consumer)))
        self._write("resourceclaim", claim.key, lambda: self.resource_claim_writes.append(entry))
        return stored

    def unreserve_resource_claim(self, claim: ResourceClaim, consumer_uid: str) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        entry = ("unreserve", claim.key, consumer_uid)
        self._write("resourceclaim", claim.key, lambda: self.resource_claim_writes.append(entry))

    def deallocate_resource_claim(self, claim: ResourceClaim) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        entry = ("deallocate", claim.key, claim.resource_version)
        self._write("resourceclaim", claim.key, lambda: self.resource_claim_writes.append(entry))

    def create_resource_claim(self, namespace: str, body: Mapping[str, Any]) -> ResourceClaim:
        if self.fail_with is not None:
            raise self.fail_with
        meta = dict(body.get("metadata") or {})
        self.created_claims += 1
        name = meta.pop("generateName", "claim-") + f"{self.created_claims:05d}"
        meta.update(name=name, namespace=namespace, uid=f"uid-{name}", resourceVersion="1")
        claim = parse_resource_claim({**body, "metadata": meta})
        entry = ("create", claim.key, dict(body))
        self._write("resourceclaim", claim.key, lambda: self.resource_claim_writes.append(entry))
        return claim

    def delete_resource_claim(self, claim: ResourceClaim) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        entry = ("delete", claim.key, claim.uid)
        self._write("resourceclaim", claim.key, lambda: self.resource_claim_writes.append(entry))

    def _update(self, kind: str, log: list[Json], obj: Json) -> Json:
        if self.fail_with is not None:
            raise self.fail_with
        meta = obj.get("metadata") or {}
        rv = str(int(meta.get("resourceVersion") or 0) + 1)
        stored: Json = {**obj, "metadata": {**meta, "resourceVersion": rv}}
        self._write(kind, meta.get("name", ""), lambda: log.append(stored))
        return stored

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        """Returns once `predicate()` holds; AssertionError after `timeout` seconds."""
        with self.changed:
            if not self.changed.wait_for(predicate, timeout):
                raise AssertionError("condition not reached before the deadline")


class RecordedEvent(NamedTuple):
    """One `eventf` call with every argument (pods as namespace/name keys, a related pod group
    as `PodGroup namespace/name`)."""

    regarding: str
    related: str | None
    event_type: str
    reason: str
    action: str
    message: str


@dataclass
class FakeRecorder:
    """Records events instead of posting them, in call order.

    `events` holds (regarding pod key, reason, message), what tests usually compare;
    `recorded` holds every argument of each call.
    """

    events: list[tuple[str, str, str]] = field(default_factory=list)
    recorded: list[RecordedEvent] = field(default_factory=list)

    def eventf(
        self,
        regarding: Pod,
        related: Pod | Gang | None,
        event_type: str,
        reason: str,
        action: str,
        message: str,
    ) -> None:
        related_key = None
        if isinstance(related, Gang):
            related_key = f"PodGroup {related.key}"
        elif related is not None:
            related_key = related.key
        self.recorded.append(
            RecordedEvent(regarding.key, related_key, event_type, reason, action, message)
        )
        self.events.append((regarding.key, reason, message))


class FakeNominator:
    """Nominated pods per node, as the queue's nominator keeps them (no priorities)."""

    def __init__(self) -> None:
        self.by_node: dict[str, list[Pod]] = {}

    def add_nominated_pod(self, pod: Pod, nominated_node_name: str) -> None:
        self.delete_nominated_pod_if_exists(pod)
        self.by_node.setdefault(nominated_node_name, []).append(pod)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        for pods in self.by_node.values():
            pods[:] = [p for p in pods if p.uid != pod.uid]

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return list(self.by_node.get(node_name, ()))

    def nominated_pods_by_node(self) -> Mapping[str, Sequence[Pod]]:
        return {node: list(pods) for node, pods in self.by_node.items() if pods}

    def nominations(self) -> Nominations:
        return Nominations.of(self.by_node)

    def nominated_node_for(self, uid: str) -> str | None:
        for node, pods in self.by_node.items():
            if any(p.uid == uid for p in pods):
                return node
        return None
