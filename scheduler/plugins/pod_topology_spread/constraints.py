"""The constraints a pod is spread by: its own of one action (DoNotSchedule for Filter,
ScheduleAnyway for Score) with matchLabelKeys merged, or the profile's default constraints
with the selector of the Services and controllers that select the pod (DefaultSelector)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduler.framework import (
    HONOR,
    IGNORE,
    Handle,
    LabelSelector,
    Pod,
    Requirement,
    TopologySpreadConstraint,
    selector_from_set,
)

#: The controllers whose selector DefaultSelector adds, by kind, with the API version the
#: owner reference must name (kube-scheduler compares group, version and kind).
_CONTROLLER_VERSIONS = {
    "ReplicationController": "v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
}


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A constraint as the plugin evaluates it: defaults applied, selector final (None
    matches nothing, as a nil labelSelector)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def selects(self, labels: Mapping[str, str]) -> bool:
        return self.selector is not None and self.selector.matches(labels)

    @property
    def counts_pods(self) -> bool:
        """countPodsMatchSelector counts nothing for an empty selector (nor a nil one)."""
        return self.selector is not None and not self.selector.is_empty()


def _merge_match_label_keys(
    constraint: TopologySpreadConstraint, pod_labels: Mapping[str, str]
) -> LabelSelector | None:
    """The selector with the pod's values of matchLabelKeys ANDed in. kube-apiserver already
    merges them at creation (MatchLabelKeysInPodTopologySpreadSelectorMerge, on in v1.37);
    kube-scheduler merges again, which is idempotent, and so does this."""
    selector = constraint.selector
    found = {k: pod_labels[k] for k in constraint.match_label_keys if k in pod_labels}
    if not found or selector is None:
        return selector
    return LabelSelector(selector_from_set(found).requirements + selector.requirements)


def own_constraints(pod: Pod, action: str) -> list[SpreadConstraint]:
    """filterTopologySpreadConstraints over the pod's spec."""
    return [
        SpreadConstraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            selector=_merge_match_label_keys(c, pod.labels),
            min_domains=c.min_domains if c.min_domains is not None else 1,
            node_affinity_policy=c.node_affinity_policy or HONOR,
            node_taints_policy=c.node_taints_policy or IGNORE,
        )
        for c in pod.topology_spread_constraints
        if c.when_unsatisfiable == action
    ]


def default_selector(pod: Pod, handle: Handle) -> LabelSelector:
    """helper.DefaultSelector: the merged selectors of the pod's Services, then its
    controller's (a ReplicationController's label set merged in, a ReplicaSet's or
    StatefulSet's requirements added)."""
    label_set: dict[str, str] = {}
    for service in handle.services(pod.namespace):
        if service.selector is not None and _set_matches(service.selector, pod.labels):
            label_set.update(service.selector)
    selector = selector_from_set(label_set)
    owner = pod.controller_ref()
    if owner is None or _CONTROLLER_VERSIONS.get(owner.kind) != owner.api_version:
        return selector
    workload = handle.workload(owner.kind, pod.namespace, owner.name)
    if workload is None:
        return selector
    if workload.set_selector is not None:
        label_set.update(workload.set_selector)
        return selector_from_set(label_set)
    if workload.selector is not None:
        return LabelSelector(_sorted(selector.requirements + workload.selector.requirements))
    return selector


def _set_matches(label_set: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in label_set.items())


def _sorted(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    """labels.Selector keeps requirements sorted by key (matching does not depend on it)."""
    return tuple(sorted(requirements, key=lambda r: r.key))


def pod_constraints(
    pod: Pod, action: str, defaults: tuple[TopologySpreadConstraint, ...], handle: Handle
) -> list[SpreadConstraint]:
    """getConstraints: the pod's own constraints of `action` when it has any, else the default
    constraints of `action` with the pod's DefaultSelector (none when that selector is empty)."""
    if pod.topology_spread_constraints:
        return own_constraints(pod, action)
    chosen = [c for c in defaults if c.when_unsatisfiable == action]
    if not chosen:
        return []
    selector = default_selector(pod, handle)
    if selector.is_empty():
        return []
    return [
        SpreadConstraint(
            max_skew=c.max_skew,
            topology_key=c.topology_key,
            selector=selector,
            min_domains=c.min_domains if c.min_domains is not None else 1,
            node_affinity_policy=c.node_affinity_policy or HONOR,
            node_taints_policy=c.node_taints_policy or IGNORE,
        )
        for c in chosen
    ]
