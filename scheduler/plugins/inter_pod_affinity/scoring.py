"""PreScore state, Score and NormalizeScore (kube-scheduler v1.37 interpodaffinity/scoring.go).

A node's raw score sums, over the topology keys it has, the weights gathered in its domain:
+weight per existing pod matching one of the pod's preferred affinity terms, -weight for its
preferred anti-affinity terms, +hardPodAffinityWeight per existing pod whose required affinity
term selects the pod, and +/-weight per existing pod whose preferred (anti-)affinity term
selects it. Built per distinct term with NodeTable queries and a bincount, never by a loop
over existing pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    MAX_NODE_SCORE,
    NodeTable,
    Pod,
    PodAffinityTerm,
    ScoreColumn,
    WeightedPodAffinityTerm,
)
from scheduler.plugins.inter_pod_affinity.domains import DomainCounts
from scheduler.plugins.inter_pod_affinity.filtering import COUNT_KEY
from scheduler.plugins.inter_pod_affinity.terms import ResolvedTerm, term_selects


@dataclass
class PreScoreState:
    """Summed weights per topology key and domain (kube-scheduler's topologyScore)."""

    scores: dict[str, DomainCounts] = field(default_factory=dict)
    #: Some term matched a pod on a node with the term's key: kube-scheduler's map is not
    #: empty. Without it PreScore returns Skip.
    matched: bool = False

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as kube-scheduler's Clone

    def _add(
        self, table: NodeTable, key: str, rows: npt.NDArray[np.intp], amounts: npt.NDArray[np.int64]
    ) -> None:
        counts = self.scores.get(key)
        if counts is None:
            counts = self.scores[key] = DomainCounts.over(table, key)
        self.matched |= counts.add_rows(rows, amounts)

    def add_incoming_term(self, table: NodeTable, term: ResolvedTerm, weight: int) -> None:
        """The pod's own preferred term: `weight` per existing pod it matches."""
        per_row = table.pod_counts((COUNT_KEY, term), term.matches)
        rows = np.flatnonzero(per_row).astype(np.intp)
        if len(rows):
            self._add(table, term.topology_key, rows, per_row[rows] * weight)

    def add_existing_terms(
        self,
        table: NodeTable,
        found: Mapping[object, tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]],
        pod: Pod,
        ns_labels: Mapping[str, str],
        weight: int | None,
        sign: int,
    ) -> None:
        """Existing pods' terms of one kind that select `pod`: each carrier adds `weight`
        (None: the term's own weight) times `sign` in its node's domain."""
        for term, (rows, counts) in found.items():
            if isinstance(term, WeightedPodAffinityTerm):
                plain, term_weight = term.term, term.weight
            elif isinstance(term, PodAffinityTerm):
                plain, term_weight = term, 0
            else:
                continue
            if term_selects(plain, pod, ns_labels):
                amount = sign * (weight if weight is not None else term_weight)
                self._add(table, plain.topology_key, rows, counts * amount)

    def score(self, labels: Mapping[str, str]) -> int:
        return sum(counts.at(labels.get(key)) for key, counts in self.scores.items())

    def score_rows(self, rows: npt.NDArray[np.intp]) -> ScoreColumn:
        total: ScoreColumn = np.zeros(len(rows), np.int64)
        for counts in self.scores.values():
            total += counts.column()[rows]
        return total


def normalize(scores: ScoreColumn) -> None:
    """NormalizeScore in place: int64(float64(100) * (float64(s-min) / float64(max-min))),
    0 everywhere when all scores are equal. The float steps are kube-scheduler's; integer
    division would differ where the quotient is not exact (29/100*100 is 28.999...)."""
    if not len(scores):
        return
    low, high = int(scores.min()), int(scores.max())
    spread = high - low
    if spread <= 0:
        scores[:] = 0
        return
    fractions = (scores - low).astype(np.float64) / np.float64(spread)
    scores[:] = (np.float64(MAX_NODE_SCORE) * fractions).astype(np.int64)
