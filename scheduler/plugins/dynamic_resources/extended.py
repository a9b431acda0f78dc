"""Extended resources backed by DRA (DRAExtendedResource, GA in v1.37), as kube-scheduler's
extendeddynamicresources.go: a pod asking for `example.com/gpu: 1` where a DeviceClass serves
that name (its `extendedResourceName`, or `deviceclass.resource.kubernetes.io/<class>`) gets,
on a node that does not advertise the resource, a claim of its own: PreFilter finds the claim
made in an earlier cycle or starts an in-memory one (no requests yet), Filter gives it the
node's requests (one per container and resource, named `container-<i>-request-<j>`), PreBind
creates it in the API (annotated, owned by the pod) and records it in the pod's
`status.extendedResourceClaimStatus`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework import (
    Device,
    DeviceClass,
    DRAManager,
    NodeInfo,
    Pod,
    ResourceClaim,
    is_dra_extended_resource_name,
    parse_resource_claim,
)
from scheduler.plugins.dynamic_resources.cel import SelectorCache

#: specialClaimInMemName: not a valid object name, so never a real claim's.
IN_MEMORY_NAME = "<extended-resources>"
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
RequestMapping = dict[str, str]


@dataclass(frozen=True)
class NodeClaim:
    """The claim for a node (its requests) and the pod's container mappings to them."""

    claim: ResourceClaim
    requests: list[dict[str, Any]]
    mappings: list[RequestMapping]


@dataclass
class ExtendedState:
    """The pod's extended-resource claim for one scheduling attempt."""

    claim: ResourceClaim
    #: The uid the in-flight allocation is kept under (the in-memory claim's, made up).
    uid: str
    #: The pod's requests of extended resources some DeviceClass serves.
    requests: dict[str, int]
    classes: dict[str, DeviceClass]
    #: Per node: the claim with that node's requests and the container mappings (None: the
    #: node offers every such resource itself).
    nodes: dict[str, NodeClaim | None] = field(default_factory=dict)
    #: Node claims by the resources DRA must serve, shared by nodes alike.
    by_names: dict[tuple[str, ...], NodeClaim] = field(default_factory=dict)
    #: The claim PreBind created (Unreserve deletes it).
    created: ResourceClaim | None = None

    @property
    def in_memory(self) -> bool:
        return self.claim.name == IN_MEMORY_NAME


def pod_requests(pod: Pod, classes: Mapping[str, DeviceClass]) -> dict[str, int]:
    """The pod's non-zero requests of extended resources a DeviceClass serves."""
    return {
        name: quantity
        for name, quantity in pod.requests.scalar.items()
        if quantity != 0 and is_dra_extended_resource_name(name) and name in classes
    }


def pre_filter(pod: Pod, dra: DRAManager) -> ExtendedState | None:
    """preFilterExtendedResources: None when no extended resource of the pod is served by a
    DeviceClass; else the pod's claim from an earlier cycle, or an in-memory one."""
    if not pod.extended_containers:
        return None
    classes = dra.extended_resource_classes()
    requests = pod_requests(pod, classes)
    if not requests:
        return None
    for claim in dra.source.claims():
        if (
            claim.extended_resource
            and claim.namespace == pod.namespace
            and claim.controller_uid == pod.uid
        ):
            return ExtendedState(claim, claim.uid, requests, classes)
    uid = str(uuid.uuid4())
    claim = parse_resource_claim(_claim_json(pod, IN_MEMORY_NAME, uid, []))
    return ExtendedState(claim, uid, requests, classes)


def _claim_json(pod: Pod, name: str, uid: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "namespace": pod.namespace,
        "generateName": f"{pod.name}-extended-resources-",
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod.name,
                "uid": pod.uid,
                "controller": True,
            }
        ],
        "annotations": {ANNOTATION: "true"},
    }
    if name:
        meta.update(name=name, uid=uid)
    spec: dict[str, Any] = {"devices": {"requests": requests}} if requests else {}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": spec,
    }


def create_body(pod: Pod, node_claim: NodeClaim) -> dict[str, Any]:
    """What PreBind creates: the node's claim without name, uid and status."""
    return _claim_json(pod, "", "", node_claim.requests)


def _request_json(name: str, class_name: str, count: int) -> dict[str, Any]:
    return {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count},
    }


def for_node(
    state: ExtendedState, pod: Pod, node_info: NodeInfo
) -> tuple[NodeClaim | None, str | None]:
    """filterExtendedResources: the node's claim and mappings (None when the node offers every
    such resource itself, or the claim is allocated already), or a rejection reason."""
    if state.claim.requests:
        # Made in an earlier cycle: PostFilter deletes it and the pod starts anew.
        return None, "cannot schedule extended resource claim"
    allocatable = node_info.allocatable.scalar
    needed = tuple(sorted(name for name in state.requests if allocatable.get(name, 0) == 0))
    if not needed or state.claim.allocation is not None:
        return None, None
    found = state.by_names.get(needed)
    if found is None:
        wanted = {name: state.classes[name] for name in needed}
        requests, mappings = requests_and_mappings(pod, wanted)
        claim = parse_resource_claim(_claim_json(pod, IN_MEMORY_NAME, state.uid, requests))
        found = NodeClaim(claim, requests, mappings)
        state.by_names[needed] = found
    return found, None


def _container_request(
    container: Any, resource: str, class_name: str, reusable: list[dict[str, Any] | None]
) -> tuple[dict[str, Any] | None, list[RequestMapping]]:
    """createResourceRequestAndMappings: the container's request for `resource` (None when
    requests of later long-lived containers, which an init container may reuse, cover it)."""
    wanted = dict(container.extended).get(resource, 0)
    if not wanted:
        return None, []
    mappings: list[RequestMapping] = []
    total = 0
    for request in reusable:
        if request is None:
            continue
        total += request["exactly"]["count"]
        mappings.append(_mapping(container.name, resource, request["name"]))
        if total >= wanted:
            return None, mappings
    name = f"container-{container.index}-request-{container.names.index(resource)}"
    mappings.append(_mapping(container.name, resource, name))
    return _request_json(name, class_name, wanted - total), mappings


def _mapping(container: str, resource: str, request: str) -> RequestMapping:
    return {"containerName": container, "resourceName": resource, "requestName": request}


def requests_and_mappings(
    pod: Pod, classes: Mapping[str, DeviceClass]
) -> tuple[list[dict[str, Any]], list[RequestMapping]]:
    """createRequestsAndMappings: per resource (sorted), one request per long-lived container
    asking for it, and one for the init containers (the largest of theirs, after what later
    long-lived containers' requests cover); requests sorted by name."""
    containers = pod.extended_containers
    long_lived = [c for c in containers if not c.short_lived]
    short_lived = [c for c in containers if c.short_lived]
    requests: list[dict[str, Any]] = []
    mappings: list[RequestMapping] = []
    for resource in sorted(classes):
        class_name = classes[resource].name
        long_requests: dict[int, dict[str, Any]] = {}
        long_mappings: list[RequestMapping] = []
        for c in long_lived:
            request, found = _container_request(c, resource, class_name, [])
            if request is not None:
                long_requests[c.index] = request
            long_mappings.extend(found)
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[RequestMapping] = []
        for c in short_lived:
            later = [long_requests.get(c2.index) for c2 in long_lived if c2.index >= c.index]
            request, found = _container_request(c, resource, class_name, later)
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            for m in short_mappings:
                if m["requestName"] in short_names:
                    m["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests.extend(long_requests[i] for i in sorted(long_requests))
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings


def class_matcher(selectors: SelectorCache) -> Callable[[DeviceClass, str, Device], bool]:
    """The CEL evaluation NodeResourcesFit's scoring borrows (DRAManager.device_class_matcher):
    a device matches a class when every CEL selector of the class accepts it."""

    def matches(cls: DeviceClass, driver: str, device: Device) -> bool:
        return all(
            selectors.get(expression).matches(driver, device)
            for expression in cls.selectors
            if expression is not None
        )

    return matches
