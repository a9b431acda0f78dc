"""PodTopologySpread: DoNotSchedule constraints filter (maxSkew, minDomains, the node
inclusion policies), ScheduleAnyway constraints score; pods without constraints are spread
by the profile's default constraints over the selectors of their Services and controllers.

The counts come from NodeTable queries (`topology_domains`, `pod_counts`) summed per domain
with numpy; Filter and Score also run as columns (`filter_batch`, `score_batch`).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    ActionType,
    BoolColumn,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    Handle,
    NodeInfo,
    NodeTable,
    Pod,
    PreFilterResult,
    ScoreColumn,
    SignFragment,
    Status,
    StatusColumn,
)
from scheduler.plugins.helper.cycle_state import read_state
from scheduler.plugins.pod_topology_spread import hints
from scheduler.plugins.pod_topology_spread.args import PodTopologySpreadArgs
from scheduler.plugins.pod_topology_spread.constraints import SpreadConstraint, pod_constraints
from scheduler.plugins.pod_topology_spread.filtering import (
    PreFilterState,
    compute_pre_filter_state,
    filter_column,
    filter_node,
    update_with_pod,
)
from scheduler.plugins.pod_topology_spread.nodes import TableView
from scheduler.plugins.pod_topology_spread.scoring import (
    PreScoreState,
    compute_pre_score_state,
    normalize,
    score_column,
    score_node,
)

NAME = "PodTopologySpread"
PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_FILTER_STATE_ERROR = f'reading "{PRE_FILTER_KEY}" from cycleState: not found'
PRE_SCORE_KEY = "PreScore" + NAME
_PRE_SCORE_STATE_ERROR = f'error reading "{PRE_SCORE_KEY}" from cycleState'
_SKIP = Status(Code.SKIP)


class PodTopologySpread:
    name = NAME

    def __init__(self, args: PodTopologySpreadArgs, handle: Handle) -> None:
        self.args = args
        self._handle = handle

    def constraints(self, pod: Pod, action: str = DO_NOT_SCHEDULE) -> list[SpreadConstraint]:
        """getConstraints: what the pod is spread by for `action`."""
        return pod_constraints(pod, action, self.args.default_constraints, self._handle)

    # --- PreFilter and its extensions -------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        constraints = self.constraints(pod)
        if not constraints:
            return None, _SKIP
        table = self._handle.snapshot().table
        state.write(PRE_FILTER_KEY, compute_pre_filter_state(pod, constraints, table))
        return None, None

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_schedule, pod_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_schedule, pod_to_remove, node_info, -1)

    def _update(
        self, state: CycleState, preemptor: Pod, pod: Pod, node_info: NodeInfo, delta: int
    ) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        update_with_pod(s, pod, preemptor, node_info.node, delta)
        return None

    # --- Filter -----------------------------------------------------------------------------

    def _pre_filter_state(self, state: CycleState) -> PreFilterState | Status:
        return read_state(state, PRE_FILTER_KEY, PreFilterState, _PRE_FILTER_STATE_ERROR)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        if not s.constraints or node_info.node is None:
            return None
        return filter_node(s, pod, node_info.node)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return None
        return filter_column(s, pod, table)

    def filter_batch_statuses(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> StatusColumn | None:
        return StatusColumn.of([self.filter(state, pod, table.infos[row]) for row in rows.tolist()])

    # --- PreScore and Score -----------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        table = self._handle.snapshot().table
        if table.n == 0:
            return _SKIP
        constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return _SKIP
        require_all = bool(pod.topology_spread_constraints) or not self.args.system_defaulted
        state.write(
            PRE_SCORE_KEY, compute_pre_score_state(pod, constraints, table, nodes, require_all)
        )
        return None

    def _pre_score_state(self, state: CycleState) -> PreScoreState | Status:
        return read_state(state, PRE_SCORE_KEY, PreScoreState, _PRE_SCORE_STATE_ERROR)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        s = self._pre_score_state(state)
        return s if isinstance(s, Status) else score_node(s, pod, node_info)

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        s = state.get(PRE_SCORE_KEY)
        if not isinstance(s, PreScoreState):
            return None
        return score_column(s, pod, table, rows, TableView(table, pod))

    def score_extensions(self) -> PodTopologySpread:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: ScoreColumn) -> Status | None:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            return s
        normalize(s, scores)
        return None

    # --- queueing ---------------------------------------------------------------------------

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Spreading depends on where other pods are, not on the pod and node alone: pods
        with constraints, explicit or defaulted (any default constraints), are not signed."""
        if pod.topology_spread_constraints:
            return None, Status(
                Code.UNSCHEDULABLE, "pods with topology constraints are not signable"
            )
        if self.args.default_constraints:
            return None, Status(
                Code.UNSCHEDULABLE, "pods with default topology constraints are not signable"
            )
        return None, None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.ASSIGNED_POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                partial(hints.after_assigned_pod_change, self.constraints),
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.TARGET_POD,
                    ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL,
                ),
                partial(hints.after_target_pod_change, self.constraints),
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                partial(hints.after_node_change, self.constraints),
            ),
        ]
