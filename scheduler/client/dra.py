"""DRA on the API server: the resource.k8s.io/v1 informers (ResourceClaims, ResourceSlices,
DeviceClasses, DeviceTaintRules) as a framework.dra.DRASource, built only when a profile's
DynamicResources asks for them, and the claim writes its PreBind, Unreserve and PostFilter make,
with kube-scheduler's request shapes (dynamicresources.go: bindClaim, Unreserve, PostFilter)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from typing import Any

from scheduler.api.dra import (
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    parse_device_class,
    parse_device_taint_rule,
    parse_resource_claim,
)
from scheduler.api.dra_slices import ResourceSlice, parse_resource_slice
from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.api.json_types import Json
from scheduler.client.informer import Informer
from scheduler.client.reflector import ListWatchSpec
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, RestClient

GROUP = "/apis/resource.k8s.io/v1"
#: The finalizer PreBind adds before it writes an allocation (resourceapi.Finalizer).
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
#: retry.DefaultRetry's steps: how often a write is tried again after a conflict.
CONFLICT_RETRIES = 5

#: Not an event resource of kube-scheduler's: a rule's change is a ResourceSlice update.
DEVICE_TAINT_RULE = "resource.k8s.io/DeviceTaintRule"
#: Each kind: its event resource name (framework.events.EventResource values), path, parser.
DRA_KINDS: Mapping[str, tuple[str, Callable[[Any], Any]]] = {
    "resource.k8s.io/ResourceClaim": (f"{GROUP}/resourceclaims", parse_resource_claim),
    "resource.k8s.io/ResourceSlice": (f"{GROUP}/resourceslices", parse_resource_slice),
    "resource.k8s.io/DeviceClass": (f"{GROUP}/deviceclasses", parse_device_class),
    DEVICE_TAINT_RULE: (f"{GROUP}/devicetaintrules", parse_device_taint_rule),
}


#: How long the start-up check waits for each answer (retries included).
CHECK_WITHIN = 30.0


def watched_kinds(taint_rules: bool) -> dict[str, tuple[str, Callable[[Any], Any]]]:
    """The kinds watched: DeviceTaintRules only with the DRADeviceTaintRules gate on, as
    kube-scheduler starts its slice tracker's rule informer only then."""
    return {k: v for k, v in DRA_KINDS.items() if taint_rules or k != DEVICE_TAINT_RULE}


def unavailable_kinds(rest: RestClient, taint_rules: bool = True) -> list[str]:
    """What of resource.k8s.io/v1 this process cannot list, one line per collection watched
    (`watched_kinds`): a 404 (the API server does not serve it) or a 403 (no permission).
    Checked once at start with a list of one object per collection; any other failure (no
    connection, 5xx) decides nothing and stops the check (the informers then retry it as
    usual)."""
    problems: list[str] = []
    for path, _parse in watched_kinds(taint_rules).values():
        resource = path.rsplit("/", 1)[-1]
        try:
            rest.get(path, {"limit": 1}, within=CHECK_WITHIN)
        except ApiError as err:
            if err.not_found:
                problems.append(f"{resource}: not served by the API server ({err})")
            elif err.forbidden:
                problems.append(f"{resource}: no permission to list ({err})")
            else:
                break
        except ApiConnectionError:
            break
    return problems


def resource_claim_path(namespace: str, name: str) -> str:
    return f"{GROUP}/namespaces/{namespace}/resourceclaims/{name}"


class DRAInformers:
    """The informers, by event resource name (`informers`): the DeviceTaintRule one only with
    `taint_rules` (the DRADeviceTaintRules gate); without it no rule is watched or applied.
    DeviceTaintRule changes reach the queue as ResourceSlice updates: the slices the plugin
    reads are the slices with the rules applied (upstream's slice tracker sends the same
    events)."""

    def __init__(self, rest: RestClient, taint_rules: bool = True, **kwargs: Any) -> None:
        self.informers: dict[str, Informer[Any]] = {
            resource: Informer(
                rest, ListWatchSpec(path), parse, name=path.rsplit("/", 1)[-1], **kwargs
            )
            for resource, (path, parse) in watched_kinds(taint_rules).items()
        }
        self.watches_taint_rules = taint_rules
        inf = self.informers
        self._claims: Informer[ResourceClaim] = inf["resource.k8s.io/ResourceClaim"]
        self._slices: Informer[ResourceSlice] = inf["resource.k8s.io/ResourceSlice"]
        self._classes: Informer[DeviceClass] = inf["resource.k8s.io/DeviceClass"]
        self._rules: Informer[DeviceTaintRule] | None = inf.get(DEVICE_TAINT_RULE)
        # next() of a count is atomic: two informer threads never lose a change.
        self._changes = itertools.count(1)
        self._revision = 0
        for informer in (self._slices, self._rules):
            if informer is not None:
                informer.add_event_handler(self._changed, self._changed, self._changed)

    def _changed(self, *_objects: Any) -> None:
        self._revision = next(self._changes)

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self._claims.get(f"{namespace}/{name}")

    def claims(self) -> list[ResourceClaim]:
        return self._claims.list()

    def slices(self) -> list[ResourceSlice]:
        return self._slices.list()

    def device_class(self, name: str) -> DeviceClass | None:
        return self._classes.get(name)

    def device_classes(self) -> list[DeviceClass]:
        return self._classes.list()

    def taint_rules(self) -> list[DeviceTaintRule]:
        return self._rules.list() if self._rules is not None else []

    def slices_revision(self) -> int:
        return self._revision

    def add_claim_handler(
        self,
        on_add: Callable[[ResourceClaim], None],
        on_update: Callable[[ResourceClaim, ResourceClaim], None],
        on_delete: Callable[[ResourceClaim], None],
    ) -> None:
        self._claims.add_event_handler(on_add, on_update, on_delete)


def _now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class ResourceClaimWrites:
    """The claim writes of DynamicResources, on a RestClient (KubeApi delegates to it)."""

    def __init__(self, rest: RestClient) -> None:
        self.rest = rest

    def reserve(
        self,
        claim: ResourceClaim,
        allocation: Mapping[str, Any] | None,
        consumer: Mapping[str, Any],
        allocation_timestamp: bool,
    ) -> ResourceClaim:
        """bindClaim's writes: the finalizer in a normal update (when an allocation is to be
        stored and the claim lacks it), then status.allocation and the consumer appended to
        status.reservedFor in one status update; on a conflict the claim is read again and
        the whole tried again. kube-pysched keeps parsed claims only, so the first attempt
        reads the claim too (upstream starts from its informer's copy)."""
        what = f"{claim.namespace}/{claim.name}"
        path = resource_claim_path(claim.namespace, claim.name)
        for attempt in range(CONFLICT_RETRIES):
            obj: Json = self.rest.get(path)
            meta = obj.setdefault("metadata", {})
            status = obj.setdefault("status", {})
            if meta.get("deletionTimestamp") is not None:
                raise RuntimeError(f"claim {what} got deleted in the meantime")
            if allocation is not None:
                if status.get("allocation") is not None:
                    raise RuntimeError(f"claim {what} got allocated elsewhere in the meantime")
                finalizers = list(meta.get("finalizers") or ())
                if DELETE_PROTECTION not in finalizers:
                    meta["finalizers"] = [*finalizers, DELETE_PROTECTION]
                    try:
                        obj = self.rest.put(path, obj)
                    except ApiError as err:
                        if err.conflict and attempt + 1 < CONFLICT_RETRIES:
                            continue
                        raise RuntimeError(f"add finalizer to claim {what}: {err}") from err
                    status = obj.setdefault("status", {})
                status["allocation"] = dict(allocation)
            status["reservedFor"] = [*(status.get("reservedFor") or ()), dict(consumer)]
            if allocation_timestamp:
                current = status.get("allocation")
                if current is None:
                    raise RuntimeError(f"claim {what} got deallocated elsewhere in the meantime")
                current.setdefault("allocationTimestamp", _now_rfc3339())
            try:
                updated: Json = self.rest.put(path + "/status", obj)
            except ApiError as err:
                if err.conflict and attempt + 1 < CONFLICT_RETRIES:
                    continue
                action = "add allocation and reservation to" if allocation else "add reservation to"
                raise RuntimeError(f"{action} claim {what}: {err}") from err
            return parse_resource_claim(updated)
        raise RuntimeError(f"claim {what}: conflicts on every attempt")

    def unreserve(self, claim: ResourceClaim, consumer_uid: str) -> None:
        """Removes one consumer from status.reservedFor with a strategic merge patch, which
        needs no current copy of the claim (upstream's Unreserve)."""
        patch = {
            "metadata": {"uid": claim.uid},
            "status": {"reservedFor": [{"$patch": "delete", "uid": consumer_uid}]},
        }
        self.rest.patch(
            resource_claim_path(claim.namespace, claim.name) + "/status",
            patch,
            STRATEGIC_MERGE_PATCH,
        )

    def create(self, namespace: str, body: Mapping[str, Any]) -> ResourceClaim:
        """POST a claim (the one made for a pod's extended resources backed by DRA); the
        claim the API server stored, with its generated name."""
        path = f"{GROUP}/namespaces/{namespace}/resourceclaims"
        created: Json = self.rest.post(path, dict(body))
        return parse_resource_claim(created)

    def delete(self, claim: ResourceClaim) -> None:
        """deleteClaim: the delete-protection finalizer removed (retried after a read on
        conflicts), then the claim deleted; a claim already gone is fine."""
        path = resource_claim_path(claim.namespace, claim.name)
        for attempt in range(CONFLICT_RETRIES):
            try:
                obj: Json = self.rest.get(path)
            except ApiError as err:
                if err.status == 404:
                    return
                raise
            meta = obj.setdefault("metadata", {})
            finalizers = list(meta.get("finalizers") or ())
            if DELETE_PROTECTION not in finalizers:
                break
            meta["finalizers"] = [f for f in finalizers if f != DELETE_PROTECTION]
            try:
                self.rest.put(path, obj)
                break
            except ApiError as err:
                if err.conflict and attempt + 1 < CONFLICT_RETRIES:
                    continue
                raise RuntimeError(f"update resourceclaim {claim.key}: {err}") from err
        try:
            self.rest.delete(path)
        except ApiError as err:
            if err.status != 404:
                raise

    def deallocate(self, claim: ResourceClaim) -> None:
        """PostFilter's status update without reservedFor, allocation and devices, at the
        resourceVersion the plugin saw (a claim changed since is a conflict, as upstream)."""
        path = resource_claim_path(claim.namespace, claim.name)
        obj: Json = self.rest.get(path)
        obj.setdefault("metadata", {})["resourceVersion"] = claim.resource_version
        status = obj.setdefault("status", {})
        for key in ("reservedFor", "allocation", "devices"):
            status.pop(key, None)
        self.rest.put(path + "/status", obj)
