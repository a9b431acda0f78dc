"""Typed, slotted views of the API objects the scheduler reads.

Only the fields scheduling needs are kept. Objects are treated as immutable once parsed;
code that needs a changed pod (assume, nominate) makes a shallow copy with `replace_pod`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.affinity import PodAffinity, PodAffinityTerm
from scheduler.api.labels import LabelSelector, NodeSelector, PreferredSchedulingTerm
from scheduler.api.resources import Resource
from scheduler.api.spread import TopologySpreadConstraint

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"

DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def to_string(self) -> str:
        """As v1.Taint.ToString(): key=value:effect, key:effect when value is empty."""
        if self.value:
            return f"{self.key}={self.value}:{self.effect}"
        return f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """As v1.Toleration.ToleratesTaint (empty effect and key are wildcards)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port that binds on the node."""

    ip: str
    protocol: str
    port: int


@dataclass(frozen=True, slots=True)
class OwnerReference:
    kind: str
    name: str
    uid: str
    controller: bool
    api_version: str = ""


@dataclass(frozen=True, slots=True)
class PodVolume:
    """A pod volume: its name, the kind of its source (the VolumeSource key, e.g.
    `persistentVolumeClaim`, `ephemeral`, `csi`), the claim it names, for PVC volumes, and the
    source's own fields (an inline CSI driver, an in-tree disk's id, `readOnly`)."""

    name: str
    source: str
    claim_name: str = ""
    spec: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class ContainerRequests:
    """One container's requests of extended resources, as DynamicResources maps them to device
    requests: `index` in initContainers + containers, `short_lived` for an init container that
    is no sidecar, `names` every resource the container requests (sorted), `extended` the
    integer extended-resource requests."""

    name: str
    index: int
    short_lived: bool
    names: tuple[str, ...]
    extended: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """spec.resourceClaims[]: a claim by name, or one generated from a template (its name is
    then in status.resourceClaimStatuses once kube-controller-manager created it)."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


@dataclass(frozen=True, slots=True)
class PodCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""


#: Pod.match_key: (namespace, labels, terminating).
PodMatchKey = tuple[str, frozenset[tuple[str, str]], bool]


@dataclass(slots=True, eq=False)
class Pod:
    """A pod as the scheduler sees it. `requests` and the non-zero values are precomputed."""

    uid: str
    namespace: str
    name: str
    resource_version: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    node_name: str = ""
    priority: int = 0
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
    node_selector: dict[str, str] = field(default_factory=dict)
    required_node_affinity: NodeSelector | None = None
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    pod_affinity: PodAffinity | None = None  # None: no pod (anti-)affinity term at all
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    volumes: tuple[PodVolume, ...] = ()
    resource_claims: tuple[str, ...] = ()  # spec.resourceClaims[].name
    pod_claims: tuple[PodResourceClaim, ...] = ()  # spec.resourceClaims
    # status.resourceClaimStatuses: (name, resourceClaimName or None), in the API's order.
    resource_claim_statuses: tuple[tuple[str, str | None], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    # spec.schedulingGroup.podGroupName: the scheduling.k8s.io PodGroup the pod belongs to
    # (gate GenericWorkload; "" when unset, or when the scheduler runs with the gate off).
    pod_group_name: str = ""
    host_ports: tuple[HostPort, ...] = ()
    # ImageLocality's image sources, normalized: init containers, containers, image volumes.
    image_refs: tuple[str, ...] = ()
    # NodeDeclaredFeatures: the features a node must declare (inferred once, at parse).
    required_node_features: frozenset[str] = frozenset()
    requests: Resource = field(default_factory=Resource)
    # Per container, only for pods requesting an extended resource (DRA-backed ones need it).
    extended_containers: tuple[ContainerRequests, ...] = ()
    non0_cpu: int = 0
    non0_mem: int = 0
    termination_grace_period_seconds: int | None = None
    creation_timestamp: float = 0.0
    deletion_timestamp: float | None = None
    phase: str = "Pending"
    nominated_node_name: str = ""
    start_time: float | None = None
    conditions: tuple[PodCondition, ...] = ()
    _match_key: PodMatchKey | None = field(default=None, repr=False)

    @property
    def match_key(self) -> PodMatchKey:
        """What label selectors over existing pods can tell apart: namespace, labels and
        whether the pod is terminating. Pods with equal keys are counted together."""
        key = self._match_key
        if key is None:
            key = (
                self.namespace,
                frozenset(self.labels.items()),
                self.deletion_timestamp is not None,
            )
            self._match_key = key
        return key

    @property
    def key(self) -> str:
        """namespace/name, the key every log line and map uses."""
        return f"{self.namespace}/{self.name}"

    @property
    def required_anti_affinity_terms(self) -> tuple[PodAffinityTerm, ...]:
        """podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution."""
        return self.pod_affinity.anti_required if self.pod_affinity is not None else ()

    def condition(self, type_: str) -> PodCondition | None:
        for cond in self.conditions:
            if cond.type == type_:
                return cond
        return None

    def controller_ref(self) -> OwnerReference | None:
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None


def replace_pod(pod: Pod, **changes: Any) -> Pod:
    """A shallow copy of `pod` with some fields changed (assume, nominate)."""
    clone = copy.copy(pod)
    clone._match_key = None
    for name, val in changes.items():
        setattr(clone, name, val)
    return clone


@dataclass(frozen=True, slots=True)
class ImageState:
    names: tuple[str, ...]
    size_bytes: int


@dataclass(slots=True, eq=False)
class Node:
    name: str
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    condition_statuses: dict[str, str] = field(default_factory=dict)
    allocatable: Resource = field(default_factory=Resource)
    images: tuple[ImageState, ...] = ()
    declared_features: tuple[str, ...] = ()  # status.declaredFeatures, as reported (sorted)


@dataclass(slots=True, eq=False)
class PodDisruptionBudget:
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    selector: LabelSelector | None = None
    disruptions_allowed: int = 0
    disrupted_pods: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
