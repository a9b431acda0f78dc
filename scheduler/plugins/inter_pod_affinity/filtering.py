"""PreFilter state and the Filter rules (kube-scheduler v1.37, InterPodAffinityHostnameFastPath
off, its default): the incoming pod's required affinity and anti-affinity, and existing pods'
required anti-affinity (symmetry).

The state is built from NodeTable queries, never from a loop over existing pods: per distinct
existing anti-affinity term `affinity_term_counts` gives its rows, per incoming term
`pod_counts` gives the matching pods per row, and a bincount over the key's domains turns rows
into per-domain counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from scheduler.framework import BoolColumn, Code, NodeTable, Pod, PodAffinityTerm, Status
from scheduler.plugins.inter_pod_affinity.domains import DomainCounts
from scheduler.plugins.inter_pod_affinity.terms import (
    ResolvedTerm,
    matches_all,
    term_selects,
)

ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"

#: Statuses are only read by the framework, so one instance per reason serves every node.
AFFINITY_REJECTED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_AFFINITY)
ANTI_AFFINITY_REJECTED = Status(Code.UNSCHEDULABLE, ERR_ANTI_AFFINITY)
EXISTING_ANTI_AFFINITY_REJECTED = Status(Code.UNSCHEDULABLE, ERR_EXISTING_ANTI_AFFINITY)

#: pod_counts keys start with this, so they cannot collide with another plugin's.
COUNT_KEY = "InterPodAffinity"


@dataclass
class PreFilterState:
    """What Filter reads; add_pod/remove_pod keep it right for preemption's dry runs and for
    nominated pods."""

    pod: Pod
    ns_labels: Mapping[str, str]
    affinity_terms: tuple[ResolvedTerm, ...]
    anti_terms: tuple[ResolvedTerm, ...]
    #: The pod matches all of its own affinity terms (it may be the first of its group).
    self_match: bool
    #: Per topology key: pods matching ALL affinity terms (each key counted once per pod).
    affinity: dict[str, DomainCounts] = field(default_factory=dict)
    #: Per topology key: pods matching each anti-affinity term (once per matched term).
    anti: dict[str, DomainCounts] = field(default_factory=dict)
    #: Per topology key: existing pods' required anti-affinity terms matching the pod.
    existing_anti: dict[str, DomainCounts] = field(default_factory=dict)

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.pod,
            self.ns_labels,
            self.affinity_terms,
            self.anti_terms,
            self.self_match,
            {key: counts.clone() for key, counts in self.affinity.items()},
            {key: counts.clone() for key, counts in self.anti.items()},
            {key: counts.clone() for key, counts in self.existing_anti.items()},
        )

    def needs_filter(self) -> bool:
        """False when kube-scheduler's PreFilter returns Skip: no existing pod's anti-affinity
        selects the pod and it has no required terms of its own."""
        return bool(self.affinity_terms or self.anti_terms) or any(
            counts.total > 0 for counts in self.existing_anti.values()
        )

    # --- building --------------------------------------------------------------------------

    def count_existing_anti_affinity(self, table: NodeTable) -> None:
        for term, (rows, counts) in table.affinity_term_counts("anti_required").items():
            if isinstance(term, PodAffinityTerm) and term_selects(term, self.pod, self.ns_labels):
                _counts_for(self.existing_anti, table, term.topology_key).add_rows(rows, counts)

    def count_incoming_terms(self, table: NodeTable) -> None:
        terms = self.affinity_terms
        if terms:
            per_row = table.pod_counts((COUNT_KEY, "all", terms), lambda p: matches_all(terms, p))
            for key in dict.fromkeys(term.topology_key for term in terms):
                _counts_for(self.affinity, table, key).add_column(per_row)
        for term in self.anti_terms:
            per_row = table.pod_counts((COUNT_KEY, term), term.matches)
            _counts_for(self.anti, table, term.topology_key).add_column(per_row)

    # --- PreFilterExtensions ---------------------------------------------------------------

    def update_with_pod(
        self, table: NodeTable, pod: Pod, labels: Mapping[str, str], amount: int
    ) -> None:
        """updateWithPod: `pod` added (+1) to or removed (-1) from a node with `labels`."""
        for existing_term in pod.required_anti_affinity_terms:
            key = existing_term.topology_key
            value = labels.get(key)
            if value is not None and term_selects(existing_term, self.pod, self.ns_labels):
                _counts_for(self.existing_anti, table, key).add_value(value, amount)
        if matches_all(self.affinity_terms, pod):
            for key in dict.fromkeys(term.topology_key for term in self.affinity_terms):
                value = labels.get(key)
                if value is not None:
                    _counts_for(self.affinity, table, key).add_value(value, amount)
        for term in self.anti_terms:
            value = labels.get(term.topology_key)
            if value is not None and term.matches(pod):
                _counts_for(self.anti, table, term.topology_key).add_value(value, amount)

    # --- Filter ----------------------------------------------------------------------------

    def check(self, labels: Mapping[str, str]) -> Status | None:
        """Filter for one node: affinity first, then the pod's anti-affinity, then existing
        pods' anti-affinity, each with kube-scheduler's code and reason."""
        if self.affinity_terms and not self._affinity_ok(labels):
            return AFFINITY_REJECTED
        for key, counts in self.anti.items():
            if counts.at(labels.get(key)) > 0:
                return ANTI_AFFINITY_REJECTED
        for key, counts in self.existing_anti.items():
            if counts.at(labels.get(key)) > 0:
                return EXISTING_ANTI_AFFINITY_REJECTED
        return None

    def _affinity_ok(self, labels: Mapping[str, str]) -> bool:
        """Every term's key on the node, and a matching pod in each term's domain; or no
        matching pod anywhere and the pod matches its own terms (the first of a group)."""
        pods_exist = True
        for term in self.affinity_terms:
            value = labels.get(term.topology_key)
            if value is None:
                return False
            if self.affinity[term.topology_key].at(value) <= 0:
                pods_exist = False
        return pods_exist or (self._no_affinity_match_anywhere() and self.self_match)

    def _no_affinity_match_anywhere(self) -> bool:
        return all(counts.total == 0 for counts in self.affinity.values())

    def reasons(self, table: NodeTable) -> tuple[BoolColumn, BoolColumn, BoolColumn]:
        """Per row: affinity rejects, anti-affinity rejects, existing anti-affinity rejects
        (each as `check` evaluates it, before the earlier rules are applied)."""
        n = table.n
        affinity_bad: BoolColumn = np.zeros(n, np.bool_)
        if self.affinity_terms:
            has_keys: BoolColumn = np.ones(n, np.bool_)
            exist: BoolColumn = np.ones(n, np.bool_)
            for counts in self.affinity.values():
                has_keys &= counts.ids >= 0
                exist &= counts.positive()
            first_of_group = self._no_affinity_match_anywhere() and self.self_match
            affinity_bad = ~has_keys | (~exist if not first_of_group else np.zeros(n, np.bool_))
        anti_bad: BoolColumn = np.zeros(n, np.bool_)
        for counts in self.anti.values():
            anti_bad |= counts.positive()
        existing_bad: BoolColumn = np.zeros(n, np.bool_)
        for counts in self.existing_anti.values():
            existing_bad |= counts.positive()
        return affinity_bad, anti_bad, existing_bad


def _counts_for(by_key: dict[str, DomainCounts], table: NodeTable, key: str) -> DomainCounts:
    counts = by_key.get(key)
    if counts is None:
        counts = by_key[key] = DomainCounts.over(table, key)
    return counts
