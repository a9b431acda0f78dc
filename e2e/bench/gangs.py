"""The gang benchmark: the same groups of pods through each scheduler's gang plugin.

    python -m e2e.bench --workload SchedulingGangs --size 1000

Variants, one run each: kube-pysched and scheduler-plugins' kube-scheduler with Coscheduling
on scheduler-plugins' v1alpha1 PodGroups (pods join by label), and kube-scheduler and
kube-pysched with GangScheduling on Kubernetes' v1beta1 PodGroups (pods join by
spec.schedulingGroup), all on control planes serving both APIs. Each run also records, over
the groups all of whose members were bound, the time from a group's first member created to its
last bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from e2e.bench.invocation import (
    ControlPlanes,
    bench_control_plane,
    run_in_turn,
    run_on_control_plane,
)
from e2e.bench.measure import PodTimes, percentile
from e2e.bench.options import DEFAULT_OPTIONS, RunOptions
from e2e.bench.record import GangFigures, RunRecord
from e2e.bench.rest import RestClient
from e2e.bench.runner import Run
from e2e.bench.schedulers import (
    KUBE_PYSCHED,
    KUBE_SCHEDULER,
    SCHEDULER_PLUGINS,
    scheduler_config,
)
from e2e.bench.workload import Size, Workload, api_object
from e2e.cluster import ControlPlane
from e2e.podgroups import GROUP as ALPHA_GROUP
from e2e.podgroups import LABEL as ALPHA_LABEL
from e2e.podgroups import PLURAL as PODGROUPS
from e2e.podgroups import PODGROUP_CRD, apply_crds
from e2e.podgroups import VERSION as ALPHA_VERSION

#: scheduler-plugins' PodGroups (the CRD; pods carry the label) and Kubernetes' own (served
#: with GenericWorkload; pods carry spec.schedulingGroup).
V1ALPHA1 = f"{ALPHA_GROUP}/{ALPHA_VERSION}"
V1BETA1 = "scheduling.k8s.io/v1beta1"
COSCHEDULING = "Coscheduling"
GANG_SCHEDULING = "GangScheduling"

#: The control plane every variant runs on: Kubernetes' PodGroups served (docs/gang.md).
GATES = {"GenericWorkload": True}
RUNTIME_CONFIG = {V1BETA1: "true"}

#: scheduler-plugins' sample configuration's Coscheduling args (manifests/coscheduling), given
#: to both Coscheduling implementations.
COSCHEDULING_ARGS = {"permitWaitingTimeSeconds": 10}


@dataclass(frozen=True)
class Variant:
    """One scheduler with one gang plugin and the PodGroup API that plugin reads."""

    scheduler: str
    plugin: str
    api: str

    @property
    def name(self) -> str:
        """How records, tables and file names tell the variants apart."""
        return f"{self.scheduler}-{self.plugin}"


VARIANTS = (
    Variant(KUBE_PYSCHED, COSCHEDULING, V1ALPHA1),
    Variant(SCHEDULER_PLUGINS, COSCHEDULING, V1ALPHA1),
    Variant(KUBE_SCHEDULER, GANG_SCHEDULING, V1BETA1),
    Variant(KUBE_PYSCHED, GANG_SCHEDULING, V1BETA1),
)


def gang_config(workload: Workload, variant: Variant) -> dict[str, Any]:
    """The bench configuration (same plugins for every scheduler) plus the variant's gang
    plugin. Coscheduling is enabled as scheduler-plugins documents it: at every extension point
    it has (multiPoint) and as the only QueueSort. GangScheduling needs nothing: kube-scheduler
    puts it in the default profile when GenericWorkload is on."""
    config = scheduler_config(workload)
    if variant.plugin != COSCHEDULING:
        return config
    profile = config["profiles"][0]
    multi = profile.setdefault("plugins", {}).setdefault("multiPoint", {})
    multi["enabled"] = [{"name": COSCHEDULING}]
    profile["plugins"]["queueSort"] = {
        "enabled": [{"name": COSCHEDULING}],
        "disabled": [{"name": "*"}],
    }
    profile["pluginConfig"] = [{"name": COSCHEDULING, "args": dict(COSCHEDULING_ARGS)}]
    return config


def podgroup_manifest(api: str, name: str, members: int) -> dict[str, Any]:
    """A PodGroup whose quorum is all `members` of the group."""
    if api == V1ALPHA1:
        return api_object(api, "PodGroup", name, {"minMember": members})
    return api_object(api, "PodGroup", name, {"schedulingPolicy": {"gang": {"minCount": members}}})


def group_times(times: PodTimes, names: list[str], group_of: list[int]) -> dict[int, float]:
    """Seconds from each group's first member seen created to its last member seen bound, for
    the groups all of whose members were bound."""
    members: dict[int, list[str]] = {}
    for name, group in zip(names, group_of, strict=True):
        members.setdefault(group, []).append(name)
    return {
        group: max(times.bound[n] for n in pods) - min(times.created[n] for n in pods)
        for group, pods in members.items()
        if all(n in times.bound for n in pods)
    }


def gang_figures(times: PodTimes, names: list[str], size: Size) -> GangFigures:
    """The groups' time to all bound: p50, p90, max (seconds), and how many groups got there."""
    done = sorted(group_times(times, names, size.group_of()).values())
    return GangFigures(
        groups=len(size.groups),
        groups_all_bound=len(done),
        group_all_bound_p50_s=round(percentile(done, 50), 3),
        group_all_bound_p90_s=round(percentile(done, 90), 3),
        group_all_bound_max_s=round(done[-1], 3) if done else 0.0,
    )


class GangRun(Run):
    """A Run whose measured pods are split into the size's groups, each a PodGroup of
    `variant.api` created during setup, its members named by label or spec.schedulingGroup."""

    def __init__(
        self, cp: ControlPlane, workload: Workload, size: Size, variant: Variant, **kwargs: Any
    ) -> None:
        super().__init__(cp, workload, size, variant.scheduler, **kwargs)
        self.variant = variant
        self._group_of = self.size.group_of()

    def scheduler_config(self) -> dict[str, Any]:
        return gang_config(self.workload, self.variant)

    def pysched_feature_gates(self) -> dict[str, bool]:
        # kube-pysched's GangScheduling reads v1beta1 PodGroups only with the gate, as
        # kube-scheduler (given the control plane's gates) does.
        return dict(GATES) if self.variant.api == V1BETA1 else {}

    def create_groups(self) -> None:
        """The alpha PodGroup CRD and scheduler-plugins' right to read its groups (kept on the
        control plane), then the groups."""
        apply_crds(self.client, PODGROUP_CRD)
        grant_podgroups(self.rest)
        path = f"/apis/{self.variant.api}/namespaces/{self.namespace}/{PODGROUPS}"
        for index, members in enumerate(self.size.groups):
            self.rest.create(path, podgroup_manifest(self.variant.api, f"group-{index}", members))

    def measured_manifest(self, name: str) -> dict[str, Any]:
        group = f"group-{self._group_of[int(name.removeprefix('pod-'))]}"
        if self.variant.api == V1BETA1:
            return self.workload.measured.manifest(name, schedulingGroup={"podGroupName": group})
        manifest = self.workload.measured.manifest(name)
        labels = manifest["metadata"].setdefault("labels", {})
        labels[ALPHA_LABEL] = group
        return manifest

    def extra_figures(self, times: PodTimes, names: list[str]) -> GangFigures:
        return gang_figures(times, names, self.size)


#: The kube-scheduler identity scheduler-plugins' build runs as (kube-scheduler's own).
SCHEDULER_USER = "system:kube-scheduler"
PODGROUP_ROLE = "bench-scheduler-plugins-podgroups"


def grant_podgroups(rest: RestClient) -> None:
    """Lets the kube-scheduler identity use scheduler-plugins' PodGroups, as scheduler-plugins'
    install manifests do for its scheduler. Without it Coscheduling's PodGroup informer never
    syncs and that scheduler binds nothing (not even the warm-up pod)."""
    group = "rbac.authorization.k8s.io"
    verbs = ["get", "list", "watch", "update", "patch"]
    resources = [PODGROUPS, f"{PODGROUPS}/status"]
    rules = [{"apiGroups": [ALPHA_GROUP], "resources": resources, "verbs": verbs}]
    role_ref = {"apiGroup": group, "kind": "ClusterRole", "name": PODGROUP_ROLE}
    subjects = [{"apiGroup": group, "kind": "User", "name": SCHEDULER_USER}]
    meta = {"name": PODGROUP_ROLE}
    rest.create(f"/apis/{group}/v1/clusterroles", {"metadata": meta, "rules": rules})
    binding = {"metadata": meta, "roleRef": role_ref, "subjects": subjects}
    rest.create(f"/apis/{group}/v1/clusterrolebindings", binding)


def gang_control_plane() -> ControlPlane:
    """A control plane serving both PodGroup APIs (not started)."""
    return bench_control_plane(feature_gates=GATES, runtime_config=RUNTIME_CONFIG)


def run_gang_workload(
    workload: Workload,
    size_name: str,
    schedulers: list[str],
    options: RunOptions = DEFAULT_OPTIONS,
    *,
    control_plane: ControlPlane | None = None,
    new_control_plane: Callable[[], ControlPlane] = gang_control_plane,
) -> list[RunRecord]:
    """Runs each variant whose scheduler is in `schedulers`, in VARIANTS order, one record
    each, on control planes as run_workloads (`new_control_plane()` must serve both PodGroup
    APIs)."""
    planes: ControlPlanes = control_plane or new_control_plane
    size = workload.sizes[size_name]

    def runs() -> Iterator[tuple[RunRecord, Callable[[RunRecord], None]]]:
        for variant in (v for v in VARIANTS if v.scheduler in schedulers):
            record = RunRecord(
                workload.name,
                size_name,
                variant.scheduler,
                variant=variant.name,
                plugin=variant.plugin,
                group_api=variant.api,
                nodes=size.nodes,
                group_sizes=list(size.groups),
                config=gang_config(workload, variant),
            )
            run = partial(GangRun, workload=workload, size=size, variant=variant, options=options)
            yield record, partial(run_on_control_plane, control_plane=planes, make_run=run)

    return run_in_turn(runs(), options)
