"""API JSON (already decoded) to the internal objects.

Raises ParseError with the offending field path; the informer records it and skips the object,
so one malformed object never stops the scheduler.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

from scheduler.api.affinity import parse_pod_affinity
from scheduler.api.images import normalized_image_name
from scheduler.api.json_types import JsonView
from scheduler.api.labels import (
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    SelectorError,
)
from scheduler.api.node_features import infer_for_scheduling
from scheduler.api.objects import (
    DEFAULT_SCHEDULER_NAME,
    PREEMPT_LOWER_PRIORITY,
    ContainerRequests,
    HostPort,
    ImageState,
    Node,
    OwnerReference,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    PodResourceClaim,
    PodVolume,
    Taint,
    Toleration,
)
from scheduler.api.pod_resources import compute_pod_resources
from scheduler.api.quantity import QuantityError, parse_quantity
from scheduler.api.resources import Resource, is_dra_extended_resource_name
from scheduler.api.spread import (
    Service,
    TopologySpreadConstraint,
    Workload,
    parse_spread_constraint,
)


class ParseError(ValueError):
    """An API object the scheduler cannot use; the message names the field."""


@lru_cache(maxsize=65536)
def parse_time(text: str | None) -> float | None:
    """RFC 3339 timestamp to seconds since the epoch."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def format_time(when: float) -> str:
    """Seconds since the epoch as metav1.Time serialises it (RFC 3339, whole seconds, UTC)."""
    return datetime.fromtimestamp(int(when), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _taints(raw: list[JsonView] | None) -> tuple[Taint, ...]:
    return tuple(
        Taint(t.get("key", ""), t.get("value", "") or "", t.get("effect", "")) for t in raw or ()
    )


def _tolerations(raw: list[JsonView] | None) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            t.get("key", "") or "",
            t.get("operator", "") or "",
            t.get("value", "") or "",
            t.get("effect", "") or "",
            t.get("tolerationSeconds"),
        )
        for t in raw or ()
    )


def _host_ports(spec: JsonView) -> tuple[HostPort, ...]:
    ports = []
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or ():
            if group == "initContainers" and container.get("restartPolicy") != "Always":
                continue
            for port in container.get("ports") or ():
                host_port = port.get("hostPort") or 0
                if host_port > 0:
                    ports.append(
                        HostPort(
                            port.get("hostIP") or "0.0.0.0",
                            port.get("protocol") or "TCP",
                            host_port,
                        )
                    )
    return tuple(ports)


def _node_affinity(
    affinity: JsonView | None,
) -> tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...]]:
    node_affinity = (affinity or {}).get("nodeAffinity") or {}
    required_raw = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    required = NodeSelector.parse(required_raw) if required_raw is not None else None
    preferred = tuple(
        PreferredSchedulingTerm(
            int(p.get("weight", 0)), NodeSelectorTerm.parse(p.get("preference") or {})
        )
        for p in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )
    return required, preferred


def parse_pod(obj: JsonView, *, scheduling_group: bool = True) -> Pod:
    """Builds a Pod from its API JSON. `scheduling_group=False` ignores
    spec.schedulingGroup, as kube-scheduler does with the GenericWorkload gate off."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    try:
        requests, non0_cpu, non0_mem = compute_pod_resources(obj)
    except QuantityError as err:
        raise ParseError(f"spec.containers[].resources: {err}") from err
    try:
        required, preferred = _node_affinity(spec.get("affinity"))
    except SelectorError as err:
        raise ParseError(f"spec.affinity.nodeAffinity: {err}") from err
    namespace = meta.get("namespace", "default")
    try:
        pod_affinity = parse_pod_affinity(namespace, spec.get("affinity") or {})
    except SelectorError as err:
        raise ParseError(f"spec.affinity: {err}") from err
    spread = _spread_constraints(spec.get("topologySpreadConstraints"))
    priority = spec.get("priority")
    group = spec.get("schedulingGroup") if scheduling_group else None
    return Pod(
        uid=meta.get("uid", ""),
        namespace=namespace,
        name=meta.get("name", ""),
        resource_version=meta.get("resourceVersion", ""),
        labels=meta.get("labels") or {},
        owner_references=tuple(
            OwnerReference(
                r.get("kind", ""),
                r.get("name", ""),
                r.get("uid", ""),
                bool(r.get("controller")),
                r.get("apiVersion", ""),
            )
            for r in meta.get("ownerReferences") or ()
        ),
        scheduler_name=spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
        node_name=spec.get("nodeName") or "",
        priority=int(priority) if priority is not None else 0,
        preemption_policy=spec.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY,
        node_selector=spec.get("nodeSelector") or {},
        required_node_affinity=required,
        preferred_node_affinity=preferred,
        pod_affinity=pod_affinity,
        topology_spread_constraints=spread,
        volumes=tuple(_volume(v) for v in spec.get("volumes") or ()),
        resource_claims=tuple(c.get("name", "") for c in spec.get("resourceClaims") or ()),
        pod_claims=tuple(
            PodResourceClaim(
                c.get("name", ""), c.get("resourceClaimName"), c.get("resourceClaimTemplateName")
            )
            for c in spec.get("resourceClaims") or ()
        ),
        resource_claim_statuses=tuple(
            (s.get("name", ""), s.get("resourceClaimName"))
            for s in status.get("resourceClaimStatuses") or ()
        ),
        tolerations=_tolerations(spec.get("tolerations")),
        scheduling_gates=tuple(g.get("name", "") for g in spec.get("schedulingGates") or ()),
        pod_group_name=(group.get("podGroupName") or "") if group else "",
        host_ports=_host_ports(spec),
        image_refs=_image_refs(spec),
        required_node_features=infer_for_scheduling(spec),
        requests=requests,
        extended_containers=_extended_containers(spec) if requests.scalar else (),
        non0_cpu=non0_cpu,
        non0_mem=non0_mem,
        termination_grace_period_seconds=spec.get("terminationGracePeriodSeconds"),
        creation_timestamp=parse_time(meta.get("creationTimestamp")) or 0.0,
        deletion_timestamp=parse_time(meta.get("deletionTimestamp")),
        phase=status.get("phase") or "Pending",
        nominated_node_name=status.get("nominatedNodeName") or "",
        start_time=parse_time(status.get("startTime")),
        conditions=tuple(
            PodCondition(
                c.get("type", ""),
                c.get("status", ""),
                c.get("reason") or "",
                c.get("message") or "",
            )
            for c in status.get("conditions") or ()
        ),
    )


def _extended_containers(spec: JsonView) -> tuple[ContainerRequests, ...]:
    """Each container's integer requests of extended resources (a quantity that is no
    integer maps to no device, as upstream's AsInt64)."""
    found: list[ContainerRequests] = []
    inits = spec.get("initContainers") or ()
    for index, container in enumerate([*inits, *(spec.get("containers") or ())]):
        requests = (container.get("resources") or {}).get("requests") or {}
        extended = []
        for name, raw in requests.items():
            if not is_dra_extended_resource_name(name):
                continue
            try:
                amount = parse_quantity(str(raw))
            except QuantityError:
                continue
            if amount.denominator == 1 and amount != 0:
                extended.append((name, int(amount)))
        if extended:
            short = index < len(inits) and container.get("restartPolicy") != "Always"
            found.append(
                ContainerRequests(
                    container.get("name", ""),
                    index,
                    short,
                    tuple(sorted(requests)),
                    tuple(sorted(extended)),
                )
            )
    return tuple(found)


def _spread_constraints(raw: list[JsonView] | None) -> tuple[TopologySpreadConstraint, ...]:
    constraints = []
    for i, item in enumerate(raw or ()):
        try:
            constraints.append(parse_spread_constraint(item))
        except (SelectorError, TypeError, ValueError) as err:
            raise ParseError(f"spec.topologySpreadConstraints[{i}]: {err}") from err
    return tuple(constraints)


def _image_refs(spec: JsonView) -> tuple[str, ...]:
    """sumImageScores' image sources in its order: every init container and container (an
    empty image included: it still counts towards the image count) and every image volume."""
    refs = [
        normalized_image_name(c.get("image") or "")
        for group in ("initContainers", "containers")
        for c in spec.get(group) or ()
    ]
    for volume in spec.get("volumes") or ():
        image = volume.get("image")
        if image is not None:
            refs.append(normalized_image_name(image.get("reference") or ""))
    return tuple(refs)


def _volume(raw: JsonView) -> PodVolume:
    source = next((key for key in raw if key != "name"), "")
    spec = raw.get(source) if source else None
    claim = (raw.get("persistentVolumeClaim") or {}).get("claimName", "")
    return PodVolume(raw.get("name", ""), source, claim, spec if isinstance(spec, dict) else {})


def parse_node(obj: JsonView) -> Node:
    """Builds a Node from its API JSON."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    try:
        allocatable = Resource.from_list(status.get("allocatable") or {})
    except QuantityError as err:
        raise ParseError(f"status.allocatable: {err}") from err
    return Node(
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        labels=meta.get("labels") or {},
        annotations=meta.get("annotations") or {},
        taints=_taints(spec.get("taints")),
        unschedulable=bool(spec.get("unschedulable")),
        condition_statuses={
            c.get("type", ""): c.get("status", "") for c in status.get("conditions") or ()
        },
        allocatable=allocatable,
        images=tuple(
            ImageState(tuple(img.get("names") or ()), int(img.get("sizeBytes") or 0))
            for img in status.get("images") or ()
        ),
        declared_features=tuple(status.get("declaredFeatures") or ()),
    )


def parse_pdb(obj: JsonView) -> PodDisruptionBudget:
    """Builds a PodDisruptionBudget from its API JSON."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    try:
        selector = LabelSelector.parse(spec.get("selector"))
    except SelectorError as err:
        raise ParseError(f"spec.selector: {err}") from err
    return PodDisruptionBudget(
        namespace=meta.get("namespace", "default"),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        selector=selector,
        disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
        disrupted_pods=frozenset((status.get("disruptedPods") or {}).keys()),
    )


def parse_service(obj: JsonView) -> Service:
    """A Service reduced to what default spreading reads: namespace, name, spec.selector."""
    meta = obj.get("metadata") or {}
    selector = (obj.get("spec") or {}).get("selector")
    return Service(
        meta.get("namespace", "default"),
        meta.get("name", ""),
        dict(selector) if selector is not None else None,
    )


def parse_workload(kind: str, obj: JsonView) -> Workload:
    """A ReplicationController (label-set selector), ReplicaSet or StatefulSet (label
    selector) reduced to namespace, name and selector. An invalid selector is kept as None,
    as kube-scheduler then adds nothing from it, rather than failing the object."""
    meta = obj.get("metadata") or {}
    raw = (obj.get("spec") or {}).get("selector")
    namespace, name = meta.get("namespace", "default"), meta.get("name", "")
    if kind == "ReplicationController":
        return Workload(kind, namespace, name, set_selector=dict(raw) if raw else None)
    try:
        selector = LabelSelector.parse(raw)
    except SelectorError:
        selector = None
    return Workload(kind, namespace, name, selector=selector)
