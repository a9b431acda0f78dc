"""PreFilter (and its AddPod/RemovePod extensions), Filter on one node (with the nominated-pods
two-pass) and PostFilter, run as kube-scheduler's frameworkImpl runs them. The Filter over all
nodes of a cycle is a FilterPass (filter_pass.py)."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Mapping, Sequence

import structlog

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.nominations import NO_NOMINATIONS, Nominations, counting_against
from scheduler.framework.pod_requests import PodRequestColumns
from scheduler.framework.runtime.base import FrameworkBase
from scheduler.framework.runtime.calls import (
    FILTER,
    POST_FILTER,
    PRE_FILTER,
    PRE_FILTER_ADD_POD,
    PRE_FILTER_REMOVE_POD,
    call_filter,
    plugin_error,
)
from scheduler.framework.runtime.counting_filter import CountingFilter
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, NodeToStatus, PostFilterResult, PreFilterResult

log = structlog.get_logger(__name__)

#: CycleState key of the cycle's read of the nominated pods, by node.
_NOMINATED_KEY = "kube-pysched/NominatedPodsByNode"


class FilterPoints(FrameworkBase):
    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Returns (merged result, status, plugins that narrowed or rejected)."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            result, status, plugins = self._run_pre_filter(state, pod, nodes)
            return result, status, plugins
        finally:
            self._observe(PRE_FILTER, status, start)

    def _run_pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        skip: set[str] = set()
        state.skip_filter_plugins = skip
        result: PreFilterResult | None = None
        with_nodes: set[str] = set()
        returned: Status | None = None
        record = state.record_plugin_metrics
        for pl in self.pre_filter_plugins:
            t0 = time.perf_counter() if record else 0.0
            try:
                r, s = pl.pre_filter(state, pod, nodes)
            except Exception as err:  # a plugin bug must not kill the scheduling loop
                r, s = None, Status.as_error(err)
            if record:
                self._observe_plugin(PRE_FILTER, pl.name, s, t0)
            if s is not None and s.code == Code.SKIP:
                skip.add(pl.name)
                continue
            if s is not None and s.code != Code.SUCCESS:
                s.plugin = pl.name
                if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, s, set()
                if s.code == Code.UNSCHEDULABLE:
                    returned = s
                    continue
                return None, plugin_error("PreFilter", pl.name, s), set()
            if r is not None and not r.all_nodes():
                with_nodes.add(pl.name)
            result = r if result is None else result.merge(r)
            if result is not None and not result.all_nodes() and not result.node_names:
                names = sorted(with_nodes)
                if len(names) == 1:
                    msg = f"node(s) didn't satisfy plugin {names[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg), with_nodes
        return result, returned, with_nodes

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension(
            state, pod_to_schedule, pod_to_add, node_info, add=True
        )

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension(
            state, pod_to_schedule, pod_to_remove, node_info, add=False
        )

    def _run_pre_filter_extension(
        self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo, add: bool
    ) -> Status | None:
        point = PRE_FILTER_ADD_POD if add else PRE_FILTER_REMOVE_POD
        for pl, ext in self._pre_filter_extensions:
            if pl.name in state.skip_filter_plugins:
                continue
            fn = ext.add_pod if add else ext.remove_pod
            status = fn(state, pod, other, node_info)
            if status is not None and status.code != Code.SUCCESS:
                return Status(
                    Code.ERROR,
                    f"running {point} on PreFilter plugin {pl.name!r}: {status.message()}",
                    plugin=pl.name,
                )
        return None

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """All Filter plugins on one node, stopping at the first rejection."""
        skip = state.skip_filter_plugins
        record = state.record_plugin_metrics
        for pl in self.filter_plugins:
            if pl.name in skip:
                continue
            t0 = time.perf_counter() if record else 0.0
            status = call_filter(pl, state, pod, node_info)
            if record:
                self._observe_plugin(FILTER, pl.name, status, t0)
            if status is not None:
                return status
        return None

    def nominated_pods_to_add(self, pod: Pod, node_name: str) -> list[Pod]:
        """Nominated pods on the node with priority >= pod's (other than pod itself)."""
        if self._nominator is None:
            return []
        return counting_against(pod, self._nominator.nominated_pods_for_node(node_name))

    def nominated_pods_to_add_by_node(
        self, state: CycleState, pod: Pod
    ) -> Mapping[str, Sequence[Pod]]:
        """nominated_pods_to_add for every node that has some (read-only)."""
        return self._cycle_nominations(state, pod).by_node()

    def nominated_pods_to_add_by_row(
        self, state: CycleState, pod: Pod, index: Mapping[str, int]
    ) -> Mapping[int, Sequence[Pod]]:
        """nominated_pods_to_add_by_node keyed by each node's row in `index` (read-only)."""
        return self._cycle_nominations(state, pod).by_row(index)

    def nominated_requests_to_add_by_row(
        self, state: CycleState, pod: Pod, index: Mapping[str, int]
    ) -> PodRequestColumns:
        """The pods of nominated_pods_to_add_by_row as request columns on their rows."""
        return self._cycle_nominations(state, pod).requests_by_row(index)

    def _cycle_nominations(self, state: CycleState, pod: Pod) -> _CycleNominations:
        """One read of the nominations per cycle: the Filter pass and the preemption dry run
        after it share it (kept in `state`, which its clones share), as the nominations stood
        at the cycle's first question."""
        cached: _CycleNominations | None = state.get(_NOMINATED_KEY)
        if cached is not None and cached.pod.uid == pod.uid:
            return cached
        nominations = NO_NOMINATIONS if self._nominator is None else self._nominator.nominations()
        found = _CycleNominations(pod, nominations)
        state.write(_NOMINATED_KEY, found)
        return found

    def counting_filter(self, state: CycleState, pod: Pod) -> CountingFilter | None:
        """This cycle's Filter in counting form when it applies (`CountingFilter`)."""
        return CountingFilter.for_cycle(
            self.filter_plugins,
            self.filter_forms,
            self._pre_filter_extensions,
            functools.partial(self.nominated_pods_to_add_by_node, state),
            state,
            pod,
            self._observe_filter,
        )

    def _observe_filter(self, plugin: str, status: Status | None, start: float) -> None:
        self._observe_plugin(FILTER, plugin, status, start)

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        nominated: Sequence[Pod] | None = None,
    ) -> Status | None:
        """The design doc's two passes: with higher-priority nominated pods, then without.
        `nominated`: the node's `nominated_pods_to_add` when the caller has it already."""
        if nominated is None:
            nominated = self.nominated_pods_to_add(pod, node_info.name)
        if not nominated:
            return self.run_filter_plugins(state, pod, node_info)
        counting = self.counting_filter(state, pod)
        if counting is not None:
            return counting.with_nominated(
                state, pod, node_info, node_info.requested, len(node_info.pods), nominated
            )
        info_with = node_info.snapshot()
        state_with = state.clone()
        for other in nominated:
            info_with.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(state_with, pod, other, info_with)
            if status is not None:
                return status
        status = self.run_filter_plugins(state_with, pod, info_with)
        if status is not None:
            return status
        return self.run_filter_plugins(state, pod, node_info)

    def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        start = time.perf_counter()
        status: Status | None = None
        # A sampled cycle's dry run observes every Filter call: written once at the end.
        deferring = (
            self.plugin_observations_deferred()
            if state.record_plugin_metrics
            else contextlib.nullcontext()
        )
        try:
            with deferring:
                result, status = self._run_post_filter(state, pod, node_to_status)
            return result, status
        finally:
            self._observe(POST_FILTER, status, start)

    def _run_post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for pl in self.post_filter_plugins:
            try:
                r, s = pl.post_filter(state, pod, node_to_status)
            except Exception as err:
                log.exception("PostFilter plugin failed", plugin=pl.name, pod=pod.key)
                return None, Status(Code.ERROR, str(err), plugin=pl.name, error=err)
            if s.code == Code.SUCCESS:
                return r, s
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, s.with_plugin(pl.name)
            if not s.is_rejected():
                return None, Status(Code.ERROR, s.message(), plugin=pl.name, error=s.error)
            if r is not None and r.nominating_info is not None and r.nominating_info.mode != 0:
                result = r
            reasons.extend(s.reasons)
            rejector = rejector or pl.name
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)


class _CycleNominations:
    """The nominations one cycle read, and those counting against its pod, by node name and
    by row (each worked out on first use)."""

    __slots__ = ("_by_node", "_by_row", "nominations", "pod")

    def __init__(self, pod: Pod, nominations: Nominations) -> None:
        self.pod = pod
        self.nominations = nominations
        self._by_node: dict[str, Sequence[Pod]] | None = None
        self._by_row: tuple[Mapping[str, int], dict[int, Sequence[Pod]]] | None = None

    def by_node(self) -> dict[str, Sequence[Pod]]:
        if self._by_node is None:
            self._by_node = self.nominations.counting_against(self.pod)
        return self._by_node

    def by_row(self, index: Mapping[str, int]) -> dict[int, Sequence[Pod]]:
        if self._by_row is None or self._by_row[0] is not index:
            self._by_row = (index, self.nominations.rows_counting_against(self.pod, index))
        return self._by_row[1]

    def requests_by_row(self, index: Mapping[str, int]) -> PodRequestColumns:
        return self.nominations.requests_counting_against(self.pod, index)
