"""The DRA objects plugins read, and the claim tracker over them (kube-scheduler's
SharedDRAManager: the claims' assume cache, the in-flight allocations and the incrementally kept
set of allocated devices). One manager serves every profile, as upstream's, so two profiles
never hand out the same device.

An allocation made in Reserve is "in flight" (`signal_pending_allocation`) until PreBind has
written it: the next cycle counts its devices as taken and waits for the claim. The claim
PreBind wrote is then assumed (`assume_after_api_call`) until the informer delivers that
version or a newer one, so the next cycle never sees the claim unallocated in between.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from scheduler.api.dra import DeviceClass, DeviceTaintRule, ResourceClaim
from scheduler.api.dra_common import DRAParseError, parse_quantity_field
from scheduler.api.dra_slices import Device, ResourceSlice, apply_taint_rules
from scheduler.api.resources import DEVICE_CLASS_RESOURCE_PREFIX

#: (driver, pool, device): equal to the allocator's DeviceID named tuples.
DeviceKey = tuple[str, str, str]
ClaimHandler = Callable[..., None]


class DRASource(Protocol):
    """The resource.k8s.io/v1 objects as the informers hold them (scheduler/client/dra.py),
    or fixed ones in tests (StaticDRA)."""

    def claim(self, namespace: str, name: str) -> ResourceClaim | None: ...

    def claims(self) -> list[ResourceClaim]: ...

    def slices(self) -> list[ResourceSlice]: ...

    def device_class(self, name: str) -> DeviceClass | None: ...

    def device_classes(self) -> list[DeviceClass]: ...

    def taint_rules(self) -> list[DeviceTaintRule]: ...

    def slices_revision(self) -> int:
        """Moves on every change of a slice or a DeviceTaintRule."""
        ...

    def add_claim_handler(
        self,
        on_add: Callable[[ResourceClaim], None],
        on_update: Callable[[ResourceClaim, ResourceClaim], None],
        on_delete: Callable[[ResourceClaim], None],
    ) -> None: ...


class ClaimNotFoundError(LookupError):
    """The assume cache has no such claim (upstream's assumecache NotFoundError wording)."""

    def __init__(self, key: str) -> None:
        super().__init__(f'could not find ResourceClaim "{key}"')


@dataclass
class AllocatedDevices:
    """What the allocator must not hand out again: dedicated devices, shares of devices that
    allow multiple allocations, and the capacity those shares consume."""

    devices: set[DeviceKey] = field(default_factory=set)
    shared: set[tuple[DeviceKey, str]] = field(default_factory=set)
    capacity: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)


def _rv(version: str) -> int:
    try:
        return int(version)
    except ValueError:
        return -1


def allocated_device_entries(
    allocation: Mapping[str, Any] | None,
) -> Iterable[tuple[DeviceKey, str | None, Mapping[str, Fraction]]]:
    """Each non-admin result of an allocation: (device, shareID or None, consumed capacity),
    as upstream's foreachAllocatedDevice (admin access never takes a device)."""
    if not allocation:
        return
    for result in (allocation.get("devices") or {}).get("results") or ():
        if result.get("adminAccess"):
            continue
        key = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
        share = result.get("shareID")
        consumed: dict[str, Fraction] = {}
        for name, raw in (result.get("consumedCapacity") or {}).items():
            try:
                consumed[name] = parse_quantity_field(raw, f"consumedCapacity[{name}]")
            except DRAParseError:
                continue  # the API server validated it; an unreadable one counts as none
        yield key, share, consumed


class ClaimTracker:
    """The claims through an assume cache, the in-flight allocations and the allocated
    devices, kept up to date on every claim event (never recomputed from all claims)."""

    def __init__(self, source: DRASource) -> None:
        self._source = source
        self._lock = threading.RLock()
        self._assumed: dict[str, ResourceClaim] = {}
        #: claim uid -> [claim with its allocation, pods sharing it]
        self._in_flight: dict[str, tuple[ResourceClaim, int]] = {}
        self._allocated = AllocatedDevices()
        self._device_counts: dict[DeviceKey, int] = {}
        self.revision = 0
        for claim in source.claims():
            self._add_devices(claim)
        source.add_claim_handler(self._on_add, self._on_update, self._on_delete)

    # --- the assume cache -------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> ResourceClaim:
        """The assumed claim while the informer has not caught up with it, else the
        informer's; raises ClaimNotFoundError."""
        key = f"{namespace}/{name}"
        with self._lock:
            assumed = self._assumed.get(key)
        if assumed is not None:
            return assumed
        claim = self._source.claim(namespace, name)
        if claim is None:
            raise ClaimNotFoundError(key)
        return claim

    def assume_after_api_call(self, claim: ResourceClaim) -> None:
        """Serves `claim` (what the API server answered to PreBind's write) until the
        informer holds its version or a newer one; ignored when the informer is already
        there."""
        with self._lock:
            current = self._visible(claim.key)
            if current is not None and _rv(current.resource_version) >= _rv(claim.resource_version):
                return
            self._assumed[claim.key] = claim
            self._changed(current, claim)

    def restore(self, namespace: str, name: str) -> None:
        """Drops the assumption: the informer's claim is served again."""
        key = f"{namespace}/{name}"
        with self._lock:
            assumed = self._assumed.pop(key, None)
            if assumed is not None:
                self._changed(assumed, self._source.claim(namespace, name))

    def assumed_count(self) -> int:
        with self._lock:
            return len(self._assumed)

    def _visible(self, key: str) -> ResourceClaim | None:
        assumed = self._assumed.get(key)
        if assumed is not None:
            return assumed
        namespace, _, name = key.partition("/")
        return self._source.claim(namespace, name)

    def _on_add(self, claim: ResourceClaim) -> None:
        self._on_update(None, claim)

    def _on_update(self, old: ResourceClaim | None, new: ResourceClaim) -> None:
        with self._lock:
            assumed = self._assumed.get(new.key)
            if assumed is not None:
                if _rv(new.resource_version) < _rv(assumed.resource_version):
                    return  # the assumed claim is newer than what the informer has
                del self._assumed[new.key]
                old = assumed
            self._changed(old, new)

    def _on_delete(self, claim: ResourceClaim) -> None:
        with self._lock:
            assumed = self._assumed.pop(claim.key, None)
            self._changed(assumed if assumed is not None else claim, None)

    # --- allocated devices ------------------------------------------------------------------

    def _changed(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        old_alloc = old.allocation if old is not None else None
        new_alloc = new.allocation if new is not None else None
        if old_alloc is new_alloc or old_alloc == new_alloc:
            return
        if old is not None:
            self._remove_devices(old)
        if new is not None:
            self._add_devices(new)

    def _add_devices(self, claim: ResourceClaim) -> None:
        entries = list(allocated_device_entries(claim.allocation))
        if not entries:
            return
        with self._lock:
            self.revision += 1
            a = self._allocated
            for key, share, consumed in entries:
                if share is None:
                    self._device_counts[key] = self._device_counts.get(key, 0) + 1
                    a.devices.add(key)
                    continue
                a.shared.add((key, share))
                total = a.capacity.setdefault(key, {})
                for name, amount in consumed.items():
                    total[name] = total.get(name, Fraction(0)) + amount

    def _remove_devices(self, claim: ResourceClaim) -> None:
        entries = list(allocated_device_entries(claim.allocation))
        if not entries:
            return
        with self._lock:
            self.revision += 1
            a = self._allocated
            for key, share, consumed in entries:
                if share is None:
                    left = self._device_counts.get(key, 0) - 1
                    if left <= 0:
                        self._device_counts.pop(key, None)
                        a.devices.discard(key)
                    else:
                        self._device_counts[key] = left
                    continue
                a.shared.discard((key, share))
                total = a.capacity.get(key)
                if total is None:
                    continue
                for name, amount in consumed.items():
                    total[name] = total.get(name, Fraction(0)) - amount
                    if total[name] <= 0:
                        del total[name]
                if not total:
                    del a.capacity[key]

    def gather_allocated_state(self) -> AllocatedDevices:
        """A copy of the allocated devices plus those of in-flight allocations (upstream's
        GatherAllocatedState): what the allocator of one scheduling attempt starts from."""
        with self._lock:
            a = self._allocated
            state = AllocatedDevices(
                set(a.devices),
                set(a.shared),
                {key: dict(amounts) for key, amounts in a.capacity.items()},
            )
            in_flight = [claim for claim, _ in self._in_flight.values()]
        for claim in in_flight:
            for key, share, consumed in allocated_device_entries(claim.allocation):
                if share is None:
                    state.devices.add(key)
                    continue
                state.shared.add((key, share))
                total = state.capacity.setdefault(key, {})
                for name, amount in consumed.items():
                    total[name] = total.get(name, Fraction(0)) + amount
        return state

    # --- in-flight allocations --------------------------------------------------------------

    def pending_allocation(self, uid: str) -> Mapping[str, Any] | None:
        with self._lock:
            entry = self._in_flight.get(uid)
        return entry[0].allocation if entry is not None else None

    def signal_pending_allocation(self, uid: str, allocated: ResourceClaim) -> None:
        """Reserve's allocation of a claim, in flight until PreBind wrote it or Unreserve
        dropped it; a second pod sharing the claim adds a share. Nothing is recorded when
        the assume cache already has the claim allocated (upstream's check)."""
        with self._lock:
            entry = self._in_flight.get(uid)
            if entry is not None:
                self._in_flight[uid] = (entry[0], entry[1] + 1)
                return
            try:
                current: ResourceClaim | None = self.get(allocated.namespace, allocated.name)
            except ClaimNotFoundError:
                current = None  # the in-memory claim of a pod's extended resources
            if current is not None and current.uid == uid and current.allocation is not None:
                return
            self._in_flight[uid] = (allocated, 1)

    def maybe_remove_pending_allocation(self, uid: str, force: bool) -> bool:
        """Drops one share (all with `force`); True when the allocation left flight."""
        with self._lock:
            entry = self._in_flight.get(uid)
            if entry is None:
                return False
            if force or entry[1] == 1:
                del self._in_flight[uid]
                return True
            self._in_flight[uid] = (entry[0], entry[1] - 1)
            return False

    def in_flight_count(self) -> int:
        with self._lock:
            return len(self._in_flight)


class DRAManager:
    """What DynamicResources reads: the claim tracker, the slices with DeviceTaintRules
    applied (kept until a slice or rule changes) and the device classes."""

    def __init__(self, source: DRASource) -> None:
        self.source = source
        self.claims = ClaimTracker(source)
        self._slices_lock = threading.Lock()
        self._patched: tuple[int, list[ResourceSlice]] | None = None
        #: DynamicResources' CEL evaluation of a DeviceClass's selectors for one device of a
        #: driver (set by that plugin): NodeResourcesFit's scoring of extended resources
        #: backed by DRA counts the devices a class matches with it.
        self.device_class_matcher: Callable[[DeviceClass, str, Device], bool] | None = None

    def slices_with_taint_rules(self) -> list[ResourceSlice]:
        return self.slices_and_revision()[1]

    def slices_and_revision(self, taint_rules: bool = True) -> tuple[int, list[ResourceSlice]]:
        """The slices with DeviceTaintRules applied (unless `taint_rules` is off: the
        DRADeviceTaintRules gate) and the revision they are of: what is derived from them (a
        node's pools) may be kept under that revision."""
        revision = self.source.slices_revision()
        if not taint_rules:
            return revision, self.source.slices()
        with self._slices_lock:
            if self._patched is not None and self._patched[0] == revision:
                return self._patched
        rules = self.source.taint_rules()
        slices = self.source.slices()
        patched = [apply_taint_rules(s, rules) for s in slices] if rules else slices
        with self._slices_lock:
            self._patched = (revision, patched)
        return revision, patched

    def device_class(self, name: str) -> DeviceClass | None:
        return self.source.device_class(name)

    def device_classes(self) -> list[DeviceClass]:
        return self.source.device_classes()

    def extended_resource_classes(self) -> dict[str, DeviceClass]:
        """The DeviceClass serving each extended resource name (upstream's extended resource
        cache): every class serves `deviceclass.resource.kubernetes.io/<name>`, and its
        `extendedResourceName` when set; of two classes naming the same resource the newer one
        (then the smaller name) serves it."""
        found: dict[str, DeviceClass] = {}
        explicit: dict[str, DeviceClass] = {}
        for cls in self.source.device_classes():
            found[DEVICE_CLASS_RESOURCE_PREFIX + cls.name] = cls
            name = cls.extended_resource_name
            if not name:
                continue
            other = explicit.get(name)
            if other is None or (cls.created, other.name) > (other.created, cls.name):
                explicit[name] = cls
        found.update(explicit)
        return found


class StaticDRA:
    """A DRASource over fixed dictionaries: the default when no informers are wired, and the
    source of unit tests (change claims through add_claim / update_claim / delete_claim so the
    tracker hears of it)."""

    def __init__(
        self,
        claims: Iterable[ResourceClaim] = (),
        slices: Iterable[ResourceSlice] = (),
        classes: Iterable[DeviceClass] = (),
        taint_rules: Iterable[DeviceTaintRule] = (),
    ) -> None:
        self._claims = {c.key: c for c in claims}
        self._slices = list(slices)
        self._classes = {c.name: c for c in classes}
        self._rules = list(taint_rules)
        self._revision = 0
        self._handlers: list[tuple[ClaimHandler, ClaimHandler, ClaimHandler]] = []

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self._claims.get(f"{namespace}/{name}")

    def claims(self) -> list[ResourceClaim]:
        return list(self._claims.values())

    def slices(self) -> list[ResourceSlice]:
        return list(self._slices)

    def device_class(self, name: str) -> DeviceClass | None:
        return self._classes.get(name)

    def device_classes(self) -> list[DeviceClass]:
        return list(self._classes.values())

    def taint_rules(self) -> list[DeviceTaintRule]:
        return list(self._rules)

    def slices_revision(self) -> int:
        return self._revision

    def add_claim_handler(
        self,
        on_add: Callable[[ResourceClaim], None],
        on_update: Callable[[ResourceClaim, ResourceClaim], None],
        on_delete: Callable[[ResourceClaim], None],
    ) -> None:
        self._handlers.append((on_add, on_update, on_delete))

    def add_claim(self, claim: ResourceClaim) -> None:
        old = self._claims.get(claim.key)
        self._claims[claim.key] = claim
        for on_add, on_update, _ in self._handlers:
            if old is None:
                on_add(claim)
            else:
                on_update(old, claim)

    def delete_claim(self, claim: ResourceClaim) -> None:
        self._claims.pop(claim.key, None)
        for _, _, on_delete in self._handlers:
            on_delete(claim)

    def add_slice(self, slice_: ResourceSlice) -> None:
        self._slices.append(slice_)
        self._revision += 1

    def add_class(self, device_class: DeviceClass) -> None:
        self._classes[device_class.name] = device_class
