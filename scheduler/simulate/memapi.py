"""The API server of a simulation: the writes the scheduling cycle makes, applied in memory.

`InMemoryApi` implements the framework's `ApiActions` (what `scheduler.client.api.KubeApi` does
against a real API server): a binding sets the pod's node, a deletion removes the pod, a status
patch sets its nominated node. Each write is also queued as the watch event the informers
would deliver (`events`), which the simulation hands to the same event handlers the live
process wires, between scheduling cycles. Storage writes play the PV controller and the
provisioner as VolumeBinding expects them to (a claim bound to the volume PreBind chose, or to
a volume provisioned on the selected node); DynamicResources' claim writes are applied to the
claim as the API server would store them.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from scheduler.api.dra import ResourceClaim, parse_resource_claim
from scheduler.api.gang import Gang
from scheduler.api.json_types import Json
from scheduler.api.objects import Pod, replace_pod
from scheduler.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    parse_claim,
    parse_volume,
)
from scheduler.backend.api_dispatcher import ApiDispatcher
from scheduler.framework.dra import StaticDRA
from scheduler.framework.storage import StaticStorage


class SimulatedApiError(Exception):
    """A write the API server would refuse (the object is gone or changed)."""


@dataclass(frozen=True, slots=True)
class PodEvent:
    """A watch event of the pod informer."""

    action: Literal["add", "update", "delete"]
    old: Pod | None
    new: Pod


@dataclass
class InMemoryApi:
    """The pods (by namespace/name) and the writes made to them, in order."""

    pods: dict[str, Pod] = field(default_factory=dict)
    storage: StaticStorage = field(default_factory=StaticStorage)
    dra: StaticDRA = field(default_factory=StaticDRA)
    raw_claims: dict[str, Json] = field(default_factory=dict)
    raw_volumes: dict[str, Json] = field(default_factory=dict)
    events: deque[PodEvent] = field(default_factory=deque)
    #: pod key -> node, every binding in order.
    bindings: dict[str, str] = field(default_factory=dict)
    #: Pods deleted by the scheduler (preemption's victims), in order.
    deleted: list[Pod] = field(default_factory=list)
    #: Told of each deletion once it is stored (a what-if that recreates preemption victims).
    on_deleted: Callable[[Pod], None] | None = None
    #: "namespace/name" -> the status.conditions the scheduler last wrote on a v1beta1
    #: PodGroup, by type (PodGroupInitiallyScheduled).
    pod_group_conditions: dict[str, dict[str, Json]] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _resource_versions: Iterator[int] = field(default_factory=lambda: itertools.count(1_000_000))

    def _stored(self, pod: Pod) -> Pod:
        stored = self.pods.get(pod.key)
        if stored is None or stored.uid != pod.uid:
            raise SimulatedApiError(f'pods "{pod.name}" not found')
        return stored

    def _update(self, old: Pod, new: Pod) -> None:
        self.pods[new.key] = new
        self.events.append(PodEvent("update", old, new))

    def add_pod(self, pod: Pod) -> None:
        """A pod created (by the what-if: added workloads, recreated pods)."""
        self.pods[pod.key] = pod
        self.events.append(PodEvent("add", None, pod))

    # --- ApiActions -------------------------------------------------------------------------

    def bind(self, pod: Pod, node_name: str) -> None:
        stored = self._stored(pod)
        if stored.node_name:
            raise SimulatedApiError(
                f"pod {pod.key} is already assigned to node {stored.node_name!r}"
            )
        self.bindings[pod.key] = node_name
        self._update(stored, replace_pod(stored, node_name=node_name, nominated_node_name=""))

    def delete_pod(self, pod: Pod, grace_period_seconds: int | None = None) -> None:
        with self._lock:  # preemption deletes its victims on parallel threads
            stored = self._stored(pod)
            del self.pods[pod.key]
            self.deleted.append(stored)
            self.events.append(PodEvent("delete", None, stored))
            if self.on_deleted is not None:
                self.on_deleted(stored)

    def patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        with self._lock:
            self._patch_pod_status(pod, patch)

    def _patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        stored = self.pods.get(pod.key)
        if stored is None or stored.uid != pod.uid:
            return  # the pod is gone: the API server would answer 404, the dispatcher logs it
        status = patch.get("status") or {}
        if "nominatedNodeName" in status:
            nominated = status["nominatedNodeName"] or ""
            if nominated != stored.nominated_node_name:
                self._update(stored, replace_pod(stored, nominated_node_name=nominated))

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """The conditions are kept for the report (merged by type, as the strategic merge
        patch merges them); they do not change what the simulation schedules."""
        conditions = self.pod_group_conditions.setdefault(f"{namespace}/{name}", {})
        for condition in (patch.get("status") or {}).get("conditions") or []:
            conditions[condition["type"]] = dict(condition)

    def update_persistent_volume(self, volume: Json) -> Json:
        """PreBind's PV↔claim binding; the PV controller's part follows at once (the claim is
        bound to it)."""
        stored = self._bump(volume)
        ref = (stored.get("spec") or {}).get("claimRef") or {}
        self.raw_volumes[stored["metadata"]["name"]] = stored
        self.storage.add(parse_volume(stored))
        key = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
        if key in self.raw_claims:
            self._bind_claim(self.raw_claims[key], stored["metadata"]["name"])
        return stored

    def update_persistent_volume_claim(self, claim: Json) -> Json:
        """PreBind's claim write: with the selected-node annotation a provisioner makes a volume
        for it on that node, then it is bound."""
        stored = self._bump(claim)
        meta = stored["metadata"]
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        self.raw_claims[key] = stored
        self.storage.add(parse_claim(stored))
        node = (meta.get("annotations") or {}).get(ANN_SELECTED_NODE)
        if node and not (stored.get("spec") or {}).get("volumeName"):
            self._provision(stored, node)
        return self.raw_claims[key]

    def _bump(self, obj: Json) -> Json:
        meta = dict(obj.get("metadata") or {})
        meta["resourceVersion"] = str(next(self._resource_versions))
        return {**obj, "metadata": meta}

    def _provision(self, claim: Json, node: str) -> None:
        meta = claim["metadata"]
        spec = claim.get("spec") or {}
        name = f"pvc-{meta.get('uid') or meta['name']}"
        requested = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "0")
        term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
        volume: Json = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "resourceVersion": str(next(self._resource_versions))},
            "spec": {
                "capacity": {"storage": requested},
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "storageClassName": spec.get("storageClassName") or "",
                "claimRef": {"namespace": meta.get("namespace", ""), "name": meta["name"]},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}},
            },
            "status": {"phase": "Bound"},
        }
        self.raw_volumes[name] = volume
        self.storage.add(parse_volume(volume))
        self._bind_claim(claim, name)

    def _bind_claim(self, claim: Json, volume: str) -> None:
        meta = dict(claim["metadata"])
        meta["annotations"] = {**(meta.get("annotations") or {}), ANN_BIND_COMPLETED: "yes"}
        meta["resourceVersion"] = str(next(self._resource_versions))
        bound: Json = {
            **claim,
            "metadata": meta,
            "spec": {**(claim.get("spec") or {}), "volumeName": volume},
            "status": {**(claim.get("status") or {}), "phase": "Bound"},
        }
        self.raw_claims[f"{meta.get('namespace', '')}/{meta['name']}"] = bound
        self.storage.add(parse_claim(bound))

    def reserve_resource_claim(
        self,
        claim: ResourceClaim,
        allocation: Mapping[str, Any] | None,
        consumer: Mapping[str, Any],
        allocation_timestamp: bool,
    ) -> ResourceClaim:
        stored = dataclasses.replace(
            claim,
            resource_version=str(next(self._resource_versions)),
            allocation=allocation if allocation is not None else claim.allocation,
            reserved_for=(*claim.reserved_for, dict(consumer)),
        )
        self.dra.add_claim(stored)
        return stored

    def unreserve_resource_claim(self, claim: ResourceClaim, consumer_uid: str) -> None:
        reserved = tuple(c for c in claim.reserved_for if c.get("uid") != consumer_uid)
        self.dra.add_claim(dataclasses.replace(claim, reserved_for=reserved))

    def deallocate_resource_claim(self, claim: ResourceClaim) -> None:
        self.dra.add_claim(dataclasses.replace(claim, reserved_for=(), allocation=None))

    def create_resource_claim(self, namespace: str, body: Mapping[str, Any]) -> ResourceClaim:
        meta = dict(body.get("metadata") or {})
        serial = next(self._resource_versions)
        name = meta.pop("generateName", "claim-") + f"{serial:x}"
        meta.update(name=name, namespace=namespace, uid=f"sim-{name}", resourceVersion="1")
        claim = parse_resource_claim({**body, "metadata": meta})
        self.dra.add_claim(claim)
        return claim

    def delete_resource_claim(self, claim: ResourceClaim) -> None:
        self.dra.delete_claim(claim)


@dataclass
class MemoryRecorder:
    """Events as the scheduler would post them: the latest FailedScheduling message per pod.
    A pod group's victims name the group as their preemptor (its key)."""

    failed: dict[str, str] = field(default_factory=dict)
    #: preemptor pod key -> the victims' keys, from the Preempted events.
    preempted: dict[str, list[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def eventf(
        self,
        regarding: Pod,
        related: Pod | Gang | None,
        event_type: str,
        reason: str,
        action: str,
        message: str,
    ) -> None:
        with self._lock:  # preemption evicts its victims on parallel threads
            if reason == "FailedScheduling":
                self.failed[regarding.key] = message
            elif reason == "Scheduled":
                self.failed.pop(regarding.key, None)
            elif reason == "Preempted" and related is not None:
                self.preempted.setdefault(related.key, []).append(regarding.key)


class InlineDispatcher(ApiDispatcher):
    """The API dispatcher with every call made at once, in the caller's thread."""

    def __init__(self) -> None:
        super().__init__(workers=0)

    def submit(self, call_type: str, key: str, call: Callable[[], None]) -> None:
        call()

    @contextmanager
    def exclusive(self, call_type: str, key: str) -> Iterator[None]:
        yield
