"""InterPodAffinity: required and preferred pod affinity and anti-affinity, and existing pods'
anti-affinity towards the pod (kube-scheduler v1.37 interpodaffinity; the
InterPodAffinityHostnameFastPath gate is alpha and off, so its classic algorithm)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    BoolColumn,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NodeTable,
    Pod,
    PreFilterResult,
    ScoreColumn,
    SignFragment,
    Status,
    StatusColumn,
    signers,
)
from scheduler.plugins.helper.cycle_state import read_state
from scheduler.plugins.inter_pod_affinity import hints
from scheduler.plugins.inter_pod_affinity.args import InterPodAffinityArgs
from scheduler.plugins.inter_pod_affinity.filtering import (
    AFFINITY_REJECTED,
    ANTI_AFFINITY_REJECTED,
    EXISTING_ANTI_AFFINITY_REJECTED,
    PreFilterState,
)
from scheduler.plugins.inter_pod_affinity.scoring import PreScoreState, normalize
from scheduler.plugins.inter_pod_affinity.terms import NO_LABELS, matches_all, resolve_all

NAME = "InterPodAffinity"
PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_FILTER_STATE_ERROR = f'error reading "{PRE_FILTER_KEY}" from cycleState'
PRE_SCORE_KEY = "PreScore" + NAME
_PRE_SCORE_STATE_ERROR = f'failed to read "{PRE_SCORE_KEY}" from cycleState'

_SKIP = Status(Code.SKIP)
_NO_LABELS: Mapping[str, str] = NO_LABELS


def _labels(node_info: NodeInfo) -> Mapping[str, str]:
    return node_info.node.labels if node_info.node is not None else _NO_LABELS


class InterPodAffinity:
    name = NAME

    def __init__(self, args: InterPodAffinityArgs, handle: Handle) -> None:
        self.args = args
        self._handle = handle

    def _ns_labels(self, pod: Pod) -> Mapping[str, str]:
        """GetNamespaceLabelsSnapshot: the pod's namespace labels, none when unknown."""
        labels = self._handle.namespace_labels(pod.namespace)
        return labels if labels is not None else NO_LABELS

    # --- PreFilter ---------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        table = self._handle.snapshot().table
        affinity = pod.pod_affinity
        required = affinity.required if affinity is not None else ()
        anti_required = affinity.anti_required if affinity is not None else ()
        affinity_terms = resolve_all(required, self._handle.namespaces)
        s = PreFilterState(
            pod=pod,
            ns_labels=self._ns_labels(pod),
            affinity_terms=affinity_terms,
            anti_terms=resolve_all(anti_required, self._handle.namespaces),
            self_match=matches_all(affinity_terms, pod),
        )
        if table.anti_affinity_total:
            s.count_existing_anti_affinity(table)
        s.count_incoming_terms(table)
        if not s.needs_filter():
            return None, _SKIP
        state.write(PRE_FILTER_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_remove, node_info, -1)

    def _update(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, amount: int
    ) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        if node_info.node is not None:
            s.update_with_pod(self._handle.snapshot().table, pod, node_info.node.labels, amount)
        return None

    # --- Filter ------------------------------------------------------------------------------

    def _pre_filter_state(self, state: CycleState) -> PreFilterState | Status:
        return read_state(state, PRE_FILTER_KEY, PreFilterState, _PRE_FILTER_STATE_ERROR)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        return s.check(_labels(node_info))

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        """One gather per topology key over every row."""
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return None
        affinity_bad, anti_bad, existing_bad = s.reasons(table)
        fits: BoolColumn = ~(affinity_bad | anti_bad | existing_bad)
        return fits

    def filter_batch_statuses(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> StatusColumn | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return None
        affinity_bad, anti_bad, existing_bad = s.reasons(table)
        # The first reason that applies, in filter's order (index 0: none, the row passes).
        of_row = np.select(
            [affinity_bad[rows], anti_bad[rows], existing_bad[rows]], [1, 2, 3], 0
        ).astype(np.intp)
        statuses: list[Status | None] = [
            None,
            AFFINITY_REJECTED,
            ANTI_AFFINITY_REJECTED,
            EXISTING_ANTI_AFFINITY_REJECTED,
        ]
        return StatusColumn(statuses, of_row)

    # --- PreScore / Score ----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        affinity = pod.pod_affinity
        preferred = affinity.preferred if affinity is not None else ()
        anti_preferred = affinity.anti_preferred if affinity is not None else ()
        if self.args.ignore_preferred_terms_of_existing_pods and not (preferred or anti_preferred):
            return _SKIP
        table = self._handle.snapshot().table
        s = PreScoreState()
        incoming = resolve_all((w.term for w in preferred), self._handle.namespaces)
        for weighted, term in zip(preferred, incoming, strict=True):
            s.add_incoming_term(table, term, weighted.weight)
        incoming_anti = resolve_all((w.term for w in anti_preferred), self._handle.namespaces)
        for weighted, term in zip(anti_preferred, incoming_anti, strict=True):
            s.add_incoming_term(table, term, -weighted.weight)
        ns_labels = self._ns_labels(pod)
        hard = self.args.hard_pod_affinity_weight
        if hard > 0:
            s.add_existing_terms(
                table, table.affinity_term_counts("required"), pod, ns_labels, hard, 1
            )
        s.add_existing_terms(
            table, table.affinity_term_counts("preferred"), pod, ns_labels, None, 1
        )
        s.add_existing_terms(
            table, table.affinity_term_counts("anti_preferred"), pod, ns_labels, None, -1
        )
        if not s.matched:
            return _SKIP
        state.write(PRE_SCORE_KEY, s)
        return None

    def _pre_score_state(self, state: CycleState) -> PreScoreState | Status:
        return read_state(state, PRE_SCORE_KEY, PreScoreState, _PRE_SCORE_STATE_ERROR)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            return s
        return s.score(_labels(node_info))

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            return None
        return s.score_rows(rows)

    def score_extensions(self) -> InterPodAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: ScoreColumn) -> Status | None:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            return s
        if s.scores:
            normalize(scores)
        return None

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Pods with (anti-)affinity depend on other pods' placement: not signed. Others sign
        their labels, which existing pods' terms may match, unless only pods with affinity
        terms are considered (ignorePreferredTermsOfExistingPods)."""
        if pod.pod_affinity is not None:
            return None, Status(Code.UNSCHEDULABLE, "pods with InterPodAffinity are not signable")
        if self.args.ignore_preferred_terms_of_existing_pods:
            return None, None
        return [SignFragment(signers.LABELS, dict(sorted(pod.labels.items())))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return hints.events_to_register()
