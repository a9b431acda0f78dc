"""Gangs: groups of pods that must be placed together (docs/gang.md).

Two APIs define groups; the scheduler reasons about one model, `Gang`, whatever the source:

* scheduler-plugins' `scheduling.x-k8s.io/v1alpha1` PodGroup (a CRD): a pod joins with the
  label `scheduling.x-k8s.io/pod-group: <name>`; the rule is `spec.minMember`. Parsed here as
  `PodGroup` and turned into a `Gang` by `gang_from_pod_group`.
* Kubernetes' `scheduling.k8s.io/v1beta1` PodGroup (gate GenericWorkload), joined through
  `spec.schedulingGroup.podGroupName`: not built yet. It will be one more `GangSource`, one more
  branch in `gang_ref` and one more `gang_from_...`; callers only ever see `GangRef` and `Gang`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.parse import parse_time
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


class GangSource(enum.StrEnum):
    """The API a group comes from (its group/version)."""

    SCHEDULER_PLUGINS = "scheduling.x-k8s.io/v1alpha1"

    @property
    def kind_path(self) -> str:
        """How messages name the API: `scheduling.x-k8s.io/v1alpha1 PodGroup`."""
        return f"{self.value} PodGroup"


def api_not_installed(source: GangSource) -> str:
    """Why members of `source`'s groups are held while its API is not served."""
    return f"the PodGroup API {source.value} is not installed (no {source.kind_path} CRD served)"


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
    """The group `pod` belongs to, or None for a pod scheduled on its own."""
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
    )
