"""Gangs: groups of pods that must be placed together (docs/gang.md).

Two APIs define groups; the scheduler reasons about one model, `Gang`, whatever the source:

* scheduler-plugins' `scheduling.x-k8s.io/v1alpha1` PodGroup (a CRD): a pod joins with the
  label `scheduling.x-k8s.io/pod-group: <name>`; the rule is `spec.minMember`. Parsed here as
  `PodGroup` and turned into a `Gang` by `gang_from_pod_group`.
* Kubernetes' `scheduling.k8s.io/v1beta1` PodGroup (gate GenericWorkload), joined through
  `spec.schedulingGroup.podGroupName`; the rule is `spec.schedulingPolicy.gang.minCount`.
  Parsed here as `KubePodGroup` and turned into a `Gang` by `gang_from_kube_pod_group`; a
  `basic` policy becomes a Gang with `policy == POLICY_BASIC` (see there).

Callers only ever see `GangRef` and `Gang`. A pod names at most one group: when it carries
both the label and the field, the field wins (`gang_ref`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.parse import format_time, parse_time
from scheduler.api.quantity import QuantityError
from scheduler.api.resources import PODS, Resource

#: The label that makes a pod a member of a scheduling.x-k8s.io PodGroup (v1alpha1.PodGroupLabel).
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

#: scheduling.x-k8s.io/v1alpha1 PodGroupPhase values (kept by the PodGroup controller).
PHASE_PENDING = "Pending"
PHASE_RUNNING = "Running"
PHASE_SCHEDULING = "Scheduling"
PHASE_UNKNOWN = "Unknown"
PHASE_FINISHED = "Finished"
PHASE_FAILED = "Failed"

#: A gang's disruption mode (kube's v1beta1 PodGroup; scheduler-plugins' groups are `Single`).
DISRUPTION_SINGLE = "Single"
DISRUPTION_ALL = "All"

#: A group's scheduling policy (kube's v1beta1 PodGroup spec.schedulingPolicy: exactly one of
#: `gang` and `basic`; scheduler-plugins' groups are always gangs).
POLICY_GANG = "Gang"
POLICY_BASIC = "Basic"

#: Well-known v1beta1 PodGroup condition types and reasons (k8s.io/api/scheduling/v1beta1).
CONDITION_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
CONDITION_DISRUPTION_TARGET = "DisruptionTarget"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

#: The feature gate that makes kube-scheduler (and kube-pysched) read the second source.
GENERIC_WORKLOAD = "GenericWorkload"


class GangSource(enum.StrEnum):
    """The API a group comes from (its group/version)."""

    SCHEDULER_PLUGINS = "scheduling.x-k8s.io/v1alpha1"
    KUBERNETES = "scheduling.k8s.io/v1beta1"

    @property
    def kind_path(self) -> str:
        """How messages name the API: `scheduling.x-k8s.io/v1alpha1 PodGroup`."""
        return f"{self.value} PodGroup"


def api_not_installed(source: GangSource) -> str:
    """Why members of `source`'s groups are held while its API is not served."""
    if source == GangSource.KUBERNETES:
        return (
            f"the PodGroup API {source.value} is not served (kube-apiserver needs "
            f"--feature-gates={GENERIC_WORKLOAD}=true --runtime-config={source.value}=true)"
        )
    return f"the PodGroup API {source.value} is not installed (no {source.kind_path} CRD served)"


def gate_disabled(source: GangSource) -> str:
    """Why `source`'s groups are not read: kube-pysched runs without the gate."""
    return (
        f"the PodGroup API {source.value} is not read: kube-pysched runs without "
        f"--feature-gates={GENERIC_WORKLOAD}=true"
    )


class GangParseError(ValueError):
    """A PodGroup the scheduler cannot use (a bad quantity in minResources)."""


@dataclass(frozen=True, slots=True)
class GangRef:
    """Which group a pod names: hashable, cheap, the key of every per-group map."""

    source: GangSource
    namespace: str
    name: str

    @property
    def key(self) -> str:
        """namespace/name (scheduler-plugins' "full name" of a PodGroup)."""
        return f"{self.namespace}/{self.name}"

    def __str__(self) -> str:
        return self.key


def gang_ref(pod: Pod) -> GangRef | None:
    """The group `pod` belongs to, or None for a pod scheduled on its own.

    `spec.schedulingGroup.podGroupName` (a scheduling.k8s.io/v1beta1 PodGroup) wins over the
    label `scheduling.x-k8s.io/pod-group` when a pod carries both: the field is the core API's
    and immutable (the label may change under a pending pod), and it is what kube-scheduler
    reads. The field is only ever set when the scheduler runs with GenericWorkload: with the
    gate off the pod parser ignores it (as kube-scheduler does), and the label applies.
    """
    if pod.pod_group_name:
        return GangRef(GangSource.KUBERNETES, pod.namespace, pod.pod_group_name)
    name = pod.labels.get(POD_GROUP_LABEL)
    if name:
        return GangRef(GangSource.SCHEDULER_PLUGINS, pod.namespace, name)
    return None


# --- scheduling.x-k8s.io/v1alpha1 PodGroup ------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodGroupStatus:
    phase: str = ""
    occupied_by: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: float | None = None


@dataclass(frozen=True, slots=True, eq=False)
class PodGroup:
    """A scheduling.x-k8s.io/v1alpha1 PodGroup, reduced to what scheduling and the status
    controller use."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    created: float
    """metadata.creationTimestamp, seconds since the epoch."""
    deleting: bool
    min_member: int
    """spec.minMember (the CRD's minimum is 1; 0 when unset)."""
    min_resources: Mapping[str, Any]
    """spec.minResources as the API gives it (resource name -> quantity)."""
    schedule_timeout_seconds: int | None
    status: PodGroupStatus = field(default_factory=PodGroupStatus)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_pod_group(obj: Mapping[str, Any]) -> PodGroup:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    min_resources = dict(spec.get("minResources") or {})
    try:
        Resource.from_list(min_resources)
    except (QuantityError, TypeError, ValueError) as err:
        raise GangParseError(f"spec.minResources: {err}") from err
    timeout = spec.get("scheduleTimeoutSeconds")
    return PodGroup(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        deleting=meta.get("deletionTimestamp") is not None,
        min_member=int(spec.get("minMember") or 0),
        min_resources=min_resources,
        schedule_timeout_seconds=int(timeout) if timeout is not None else None,
        status=PodGroupStatus(
            phase=status.get("phase") or "",
            occupied_by=status.get("occupiedBy") or "",
            running=int(status.get("running") or 0),
            succeeded=int(status.get("succeeded") or 0),
            failed=int(status.get("failed") or 0),
            schedule_start_time=parse_time(status.get("scheduleStartTime")),
        ),
    )


# --- scheduling.k8s.io/v1beta1 PodGroup ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodGroupCondition:
    """A metav1.Condition of a v1beta1 PodGroup's status."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None
    observed_generation: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class KubePodGroup:
    """Kubernetes' scheduling.k8s.io/v1beta1 PodGroup (gate GenericWorkload), reduced to what
    scheduling reads. Joined by pods through spec.schedulingGroup.podGroupName."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int
    created: float
    """metadata.creationTimestamp, seconds since the epoch."""
    deleting: bool
    policy: str
    """POLICY_GANG or POLICY_BASIC (spec.schedulingPolicy: exactly one is set)."""
    min_count: int
    """spec.schedulingPolicy.gang.minCount (validated >= 1); 0 for a basic policy."""
    disruption_mode: str = DISRUPTION_SINGLE
    """spec.disruptionMode: {single: {}} -> Single (also the default), {all: {}} -> All."""
    priority_class_name: str = ""
    priority: int | None = None
    """spec.priority, resolved from priorityClassName by the Priority admission plugin."""
    preemption_policy: str = ""
    """spec.preemptionPolicy (gate PodGroupPreemptionPolicy); "" when unset."""
    workload_name: str = ""
    """spec.workloadRef.workloadName: the Workload whose template made the group."""
    template_name: str = ""
    conditions: tuple[PodGroupCondition, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def condition(self, type_: str) -> PodGroupCondition | None:
        for cond in self.conditions:
            if cond.type == type_:
                return cond
        return None


def _disruption_mode(raw: Mapping[str, Any] | None) -> str:
    if raw and raw.get("all") is not None:
        return DISRUPTION_ALL
    return DISRUPTION_SINGLE


def parse_kube_pod_group(obj: Mapping[str, Any]) -> KubePodGroup:
    """A scheduling.k8s.io/v1beta1 PodGroup from its API JSON. The API server validates that
    exactly one policy is set; an object with neither is a GangParseError."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    policy_raw = spec.get("schedulingPolicy") or {}
    gang = policy_raw.get("gang")
    if gang is not None:
        policy, min_count = POLICY_GANG, int(gang.get("minCount") or 0)
    elif policy_raw.get("basic") is not None:
        policy, min_count = POLICY_BASIC, 0
    else:
        raise GangParseError("spec.schedulingPolicy: neither gang nor basic is set")
    priority = spec.get("priority")
    workload = spec.get("workloadRef") or {}
    return KubePodGroup(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        generation=int(meta.get("generation") or 0),
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        deleting=meta.get("deletionTimestamp") is not None,
        policy=policy,
        min_count=min_count,
        disruption_mode=_disruption_mode(spec.get("disruptionMode")),
        priority_class_name=spec.get("priorityClassName") or "",
        priority=int(priority) if priority is not None else None,
        preemption_policy=spec.get("preemptionPolicy") or "",
        workload_name=workload.get("workloadName") or "",
        template_name=workload.get("templateName") or "",
        conditions=tuple(
            PodGroupCondition(
                type=c.get("type", ""),
                status=c.get("status", ""),
                reason=c.get("reason") or "",
                message=c.get("message") or "",
                last_transition_time=parse_time(c.get("lastTransitionTime")),
                observed_generation=int(c.get("observedGeneration") or 0),
            )
            for c in status.get("conditions") or ()
        ),
    )


# --- the model ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Gang:
    """A group as the scheduler applies it, whichever API defined it."""

    source: GangSource
    namespace: str
    name: str
    min_member: int
    min_resources: Resource | None
    """What the whole group needs free in the cluster before any member is tried (None: no
    such check). `pods` is set to min_member, as scheduler-plugins counts pod slots too."""
    min_resource_names: tuple[str, ...]
    """The resources min_resources names (those the check compares), `pods` included."""
    schedule_timeout: float | None
    """How long placed members wait at Permit for the rest; None: the plugin's default."""
    created: float
    disruption_mode: str = DISRUPTION_SINGLE
    policy: str = POLICY_GANG
    """POLICY_BASIC: the group exists (its members are not held as "not found") but imposes
    nothing - each member is scheduled on its own, as kube-scheduler's GangScheduling lets
    them through; min_member is then 1."""
    priority_class_name: str = ""
    priority: int | None = None
    """The group's own priority (v1beta1 spec.priority); None: the members' priorities."""
    preemption_policy: str = ""
    """v1beta1 spec.preemptionPolicy ("" when unset: the members' own decide)."""
    generation: int = 0
    """metadata.generation (v1beta1): the observedGeneration of the conditions written."""
    conditions: tuple[PodGroupCondition, ...] = ()
    """status.conditions (v1beta1), as the informer last saw them."""
    uid: str = ""
    resource_version: str = field(default="", compare=False)
    """metadata.uid and resourceVersion: a victim of the group's preemption names the PodGroup
    by them (its Preempted event's related object)."""

    @property
    def is_gang(self) -> bool:
        """All or nothing: minMember members must be placed together."""
        return self.policy == POLICY_GANG

    @property
    def ref(self) -> GangRef:
        return GangRef(self.source, self.namespace, self.name)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def gang_from_pod_group(group: PodGroup) -> Gang:
    """A scheduler-plugins PodGroup as a Gang (minMember below 1 counts as 1, the CRD's
    minimum)."""
    min_member = max(group.min_member, 1)
    min_resources: Resource | None = None
    names: tuple[str, ...] = ()
    if group.min_resources:
        min_resources = Resource.from_list(group.min_resources)
        min_resources.allowed_pod_number = min_member
        names = tuple(sorted({*group.min_resources, PODS}))
    return Gang(
        source=GangSource.SCHEDULER_PLUGINS,
        namespace=group.namespace,
        name=group.name,
        min_member=min_member,
        min_resources=min_resources,
        min_resource_names=names,
        schedule_timeout=(
            float(group.schedule_timeout_seconds)
            if group.schedule_timeout_seconds is not None
            else None
        ),
        created=group.created,
        uid=group.uid,
        resource_version=group.resource_version,
    )


def gang_from_kube_pod_group(group: KubePodGroup) -> Gang:
    """A scheduling.k8s.io/v1beta1 PodGroup as a Gang.

    A `gang` policy: min_member = minCount (at least 1). A `basic` policy is no gang: it is a
    Gang with policy POLICY_BASIC and min_member 1, so the group exists for "is my group
    there?" (kube-scheduler holds a member until its PodGroup exists, whatever the policy) but
    quorum, the group cycle and group backoff do not apply (`Gang.is_gang` is False). No
    minResources (the API has none); the Permit timeout is the plugin's (kube-scheduler's
    GangScheduling waits 5 minutes)."""
    basic = group.policy == POLICY_BASIC
    return Gang(
        source=GangSource.KUBERNETES,
        namespace=group.namespace,
        name=group.name,
        min_member=1 if basic else max(group.min_count, 1),
        min_resources=None,
        min_resource_names=(),
        schedule_timeout=None,
        created=group.created,
        disruption_mode=group.disruption_mode,
        policy=group.policy,
        priority_class_name=group.priority_class_name,
        priority=group.priority,
        preemption_policy=group.preemption_policy,
        generation=group.generation,
        conditions=group.conditions,
        uid=group.uid,
        resource_version=group.resource_version,
    )


def pod_group_condition_patch(
    gang: Gang, status: str, reason: str, message: str, now: float
) -> dict[str, Any] | None:
    """The podgroups/status strategic merge patch that sets PodGroupInitiallyScheduled after a
    group attempt, as kube-scheduler's updatePodGroupCondition: None when nothing would change
    (same status, reason, message and observedGeneration: no write at all) and when the
    condition is already True and the new one is not (a group once scheduled does not regress
    because a later attempt for extra members failed). lastTransitionTime moves only when the
    status does (metav1.SetStatusCondition)."""
    current = next((c for c in gang.conditions if c.type == CONDITION_INITIALLY_SCHEDULED), None)
    if current is not None and current.status == "True" and status != "True":
        return None
    if (
        current is not None
        and current.status == status
        and current.reason == reason
        and current.message == message
        and current.observed_generation == gang.generation
    ):
        return None
    since = (
        current.last_transition_time if current is not None and current.status == status else None
    )
    condition: dict[str, Any] = {
        "type": CONDITION_INITIALLY_SCHEDULED,
        "status": status,
        "observedGeneration": gang.generation,
        "lastTransitionTime": format_time(since if since is not None else now),
        "reason": reason,
        "message": message,
    }
    return {"status": {"conditions": [condition]}}
