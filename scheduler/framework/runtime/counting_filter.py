"""Filter of one pod on a node whose pods change only in number and requests.

Preemption asks, thousands of times per attempt, "does the pod fit on this node with these pods
removed (or with the pods nominated to it added)?". Done as written, every question copies the
NodeInfo and the CycleState, moves pods between them and runs every Filter plugin again. When the
only Filter plugin that looks at a node's pods is one that just counts them and sums their
requests (NodeResourcesFit), and every other one reads only the Node, the answer depends on the
node and on (requested, number of pods) alone: `CountingFilter` computes it from those, running
the same plugins in the same order and returning the same Status as the plugins would on the
changed NodeInfo.

It applies to a cycle only when, after PreFilter:

* every Filter plugin that runs either declares `filter_reads_node_only = True` (its Filter
  reads `node_info.node` and the cycle state, nothing about the node's pods) or is a
  `PodCountingFilter` (its Filter reads only allocatable, requested and the pod count);
* no PreFilter extension (AddPod/RemovePod) runs, so moving pods changes no cycle state.

Otherwise `for_cycle` returns None and callers take the general path. In a cycle that records
per-plugin metrics (the sampled 10 %), each plugin asked is timed and observed as the general
path's call would be, one observation per plugin per question, and no plugin is skipped as
known to pass, so the histograms count the same calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal, cast

import numpy as np

from scheduler.api.objects import Pod
from scheduler.api.resources import Resource
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    FilterPlugin,
    PodCountingFilter,
    PreFilterExtensions,
    PreFilterPlugin,
    RequestFitFilter,
)
from scheduler.framework.node_table import BoolColumn, NodeTable
from scheduler.framework.runtime.calls import call_filter, word_filter_status
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo

_STATE_KEY = "kube-pysched/CountingFilter"


#: The pods nominated to each node (that have any) that count against a pod there, read once
#: per cycle (the framework keeps the read in the CycleState).
NominatedByNode = Callable[[Pod], Mapping[str, Sequence[Pod]]]
#: Records one Filter call of a plugin: (plugin name, its Status, perf_counter at the start).
ObserveFilter = Callable[[str, Status | None, float], None]
#: How a Filter plugin is answered without its node's pods: it reads only the Node ("node"),
#: it is a PodCountingFilter ("count"), one that is also a RequestFitFilter ("room"), or it
#: has no such form (None).
FilterForm = Literal["node", "count", "room"] | None


def filter_form(pl: FilterPlugin) -> FilterForm:
    """`pl`'s FilterForm. Worked out once per profile, not per cycle: an isinstance check
    against a runtime-checkable Protocol costs tens of microseconds."""
    if getattr(pl, "filter_reads_node_only", False) is True:
        return "node"
    if isinstance(pl, RequestFitFilter):
        return "room"
    if isinstance(pl, PodCountingFilter):
        return "count"
    return None


class CountingFilter:
    """The cycle's Filter plugins, in order, as (plugin, its counting form or None), and the
    framework's rule for which nominated pods count against the pod on a node."""

    __slots__ = (
        "_counting_steps",
        "_node_only_passes",
        "_node_only_steps",
        "_nominated",
        "_observe",
        "_room_rules",
        "_steps",
    )

    def __init__(
        self,
        steps: list[tuple[FilterPlugin, PodCountingFilter | None]],
        nominated: NominatedByNode,
        observe: ObserveFilter | None = None,
        room_rules: list[RequestFitFilter] | None = None,
    ) -> None:
        """`room_rules`: the counting plugins as room rules, when every one of them is one
        (in their order)."""
        self._steps = steps
        self._counting_steps = [(pl, c) for pl, c in steps if c is not None]
        self._node_only_steps = [(pl, c) for pl, c in steps if c is None]
        self._nominated = nominated
        self._observe = observe
        self._room_rules = room_rules
        #: node_only_passes' answer, for the table it was asked about.
        self._node_only_passes: tuple[NodeTable, BoolColumn | None] | None = None

    @staticmethod
    def for_cycle(
        filter_plugins: Iterable[FilterPlugin],
        forms: Mapping[str, FilterForm],
        extensions: Iterable[tuple[PreFilterPlugin, PreFilterExtensions]],
        nominated: NominatedByNode,
        state: CycleState,
        pod: Pod,
        observe: ObserveFilter | None = None,
    ) -> CountingFilter | None:
        """The counting form of this cycle's Filter for `pod`, or None when it does not apply
        (see the module docstring); `forms`: each plugin's `filter_form`. Cached in `state`
        (clones share it)."""
        cached = state.get(_STATE_KEY)
        if cached is not None and cached[0] == pod.uid:
            found: CountingFilter | None = cached[1]
            return found
        found = _build(filter_plugins, forms, extensions, nominated, state, observe)
        state.write(_STATE_KEY, (pod.uid, found))
        return found

    @staticmethod
    def decline(state: CycleState, pod: Pod) -> None:
        """Makes this cycle take the general path for `pod` (the differential tests compare
        the two on one cluster)."""
        state.write(_STATE_KEY, (pod.uid, None))

    @property
    def counting_plugins(self) -> frozenset[str]:
        """The plugins answered in counting form (the others read only the Node)."""
        return frozenset(pl.name for pl, _ in self._counting_steps)

    def nominated_by_node(self, pod: Pod) -> Mapping[str, Sequence[Pod]]:
        """`nominated_pods` of every node that has some."""
        return self._nominated(pod)

    def nominated_pods(self, pod: Pod, node_name: str) -> Sequence[Pod]:
        """The pods nominated to the node that count against `pod` there, as the
        nominations stood at this cycle's first question."""
        return self._nominated(pod).get(node_name, [])

    def fit_requests(self, state: CycleState, pod: Pod) -> list[Resource] | None:
        """Each counting plugin's room rule (RequestFitFilter), or None when one has none."""
        if self._room_rules is None:
            return None
        return [rule.fit_request(state, pod) for rule in self._room_rules]

    def node_only_status(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """The first rejection among the plugins that read only the Node, in the cycle's
        order: `status` on a node where the counting plugins are known to pass."""
        return self._run(self._node_only_steps, state, pod, node_info, node_info.requested, 0)

    def node_only_passes(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        """Per row of `table`, whether every plugin that reads only the Node passes (their
        batch columns together), or None when one of them has no column for this pod. Asked
        once per table in a cycle (the dry run asks per chunk of nodes)."""
        cached = self._node_only_passes
        if cached is not None and cached[0] is table:
            return cached[1]
        passes: BoolColumn | None = np.ones(table.n, np.bool_)
        for pl, _ in self._node_only_steps:
            batch = getattr(pl, "filter_batch", None)
            column = batch(state, pod, table) if callable(batch) else None
            if column is None:
                passes = None
                break
            passes = passes & column
        self._node_only_passes = (table, passes)
        return passes

    def status(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        requested: Resource,
        pods: int,
        counts_only: bool = False,
    ) -> Status | None:
        """What running the Filter plugins returns on `node_info` with its pods replaced by
        `pods` pods requesting `requested` in total. `counts_only`: the plugins that read
        only the Node are known to pass (they did on this node in this cycle), so only the
        counting plugins run (not in a cycle that records plugin metrics: there every plugin
        runs, as on the general path)."""
        sampled = self._observe is not None and state.record_plugin_metrics
        steps = self._counting_steps if counts_only and not sampled else self._steps
        return self._run(steps, state, pod, node_info, requested, pods)

    def _run(
        self,
        steps: Sequence[tuple[FilterPlugin, PodCountingFilter | None]],
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        requested: Resource,
        pods: int,
    ) -> Status | None:
        """`steps` in order, stopping at the first rejection; each timed and observed in a
        cycle that records plugin metrics."""
        observe = self._observe if state.record_plugin_metrics else None
        for pl, counting in steps:
            start = time.perf_counter() if observe is not None else 0.0
            if counting is None:
                status = call_filter(pl, state, pod, node_info)
            else:
                status = call_filter_counts(
                    counting, state, pod, node_info.allocatable, requested, pods
                )
            if observe is not None:
                observe(pl.name, status, start)
            if status is not None:
                return status
        return None

    def with_nominated(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        requested: Resource,
        pods: int,
        nominated: Sequence[Pod] | None = None,
        counts_only: bool = False,
    ) -> Status | None:
        """run_filter_plugins_with_nominated_pods on that node: with the pods nominated to it
        (`nominated`, else the framework's list) added, then without. `counts_only`: as for
        `status`."""
        if nominated is None:
            nominated = self.nominated_pods(pod, node_info.name)
        if nominated:
            with_requested = requested.clone()
            for other in nominated:
                with_requested.add(other.requests)
            status = self.status(
                state, pod, node_info, with_requested, pods + len(nominated), counts_only
            )
            if status is not None:
                return status
        return self.status(state, pod, node_info, requested, pods, counts_only)


def _build(
    filter_plugins: Iterable[FilterPlugin],
    forms: Mapping[str, FilterForm],
    extensions: Iterable[tuple[PreFilterPlugin, PreFilterExtensions]],
    nominated: NominatedByNode,
    state: CycleState,
    observe: ObserveFilter | None,
) -> CountingFilter | None:
    skip = state.skip_filter_plugins
    if any(pl.name not in skip for pl, _ in extensions):
        return None
    steps: list[tuple[FilterPlugin, PodCountingFilter | None]] = []
    rules: list[RequestFitFilter] | None = []
    for pl in filter_plugins:
        if pl.name in skip:
            continue
        form = forms[pl.name]
        if form == "node":
            steps.append((pl, None))
            continue
        if form is None:
            return None
        steps.append((pl, cast(PodCountingFilter, pl)))
        if form == "room" and rules is not None:
            rules.append(cast(RequestFitFilter, pl))
        else:
            rules = None
    return CountingFilter(steps, nominated, observe, rules)


def call_filter_counts(
    pl: PodCountingFilter,
    state: CycleState,
    pod: Pod,
    allocatable: Resource,
    requested: Resource,
    pods: int,
) -> Status | None:
    """`call_filter` for the counting form: the same wording of errors and the plugin tag."""
    status: Status | None
    try:
        status = pl.filter_counts(state, pod, allocatable, requested, pods)
    except Exception as err:
        status = Status.as_error(err)
    return word_filter_status(pl.name, status)
