"""Counts of existing pods per node row, kept incrementally for affinity and spreading.

InterPodAffinity and PodTopologySpread ask, every cycle, "how many pods matching this selector
are on each node" and "which nodes hold pods carrying this affinity term". Answering by walking
every pod of every node costs Python work per existing pod per cycle. Here each NodeInfo counts
its pods by `Pod.match_key` (namespace, labels, terminating) and by affinity term; a query's
column is computed once per table lineage and then corrected only for the nodes that changed
(usually the one a pod was just assumed on), with the predicate evaluated once per distinct
match key.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod, PodMatchKey
from scheduler.framework.types import AFFINITY_KINDS, NodeInfo

IntColumn = npt.NDArray[np.int64]
Rows = npt.NDArray[np.intp]

#: Queries kept up to date at once; beyond it the least recently asked half is dropped.
MAX_QUERIES = 512


@dataclass(slots=True)
class _Query:
    matches: Callable[[Pod], bool]
    column: IntColumn
    memo: dict[PodMatchKey, bool] = field(default_factory=dict)

    def selects(self, key: PodMatchKey) -> bool:
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = self.matches(_as_pod(key))
        return found


def _as_pod(key: PodMatchKey) -> Pod:
    """A stand-in pod with exactly what a match key holds, for evaluating a predicate."""
    namespace, labels, terminating = key
    return Pod(
        uid="",
        namespace=namespace,
        name="",
        labels=dict(labels),
        deletion_timestamp=0.0 if terminating else None,
    )


class PodIndex:
    """The pod-count queries of one NodeTable (see NodeTable.pod_counts)."""

    def __init__(self, infos: list[NodeInfo]) -> None:
        self._infos = infos
        self._queries: dict[Hashable, _Query] = {}
        self._terms: dict[str, dict[Hashable, IntColumn]] | None = None
        self._term_totals: dict[tuple[str, object], int] = {}
        self._term_views: dict[str, Mapping[Hashable, tuple[Rows, IntColumn]]] = {}

    # --- queries ----------------------------------------------------------------------------

    def pod_counts(self, key: Hashable, matches: Callable[[Pod], bool]) -> IntColumn:
        query = self._queries.get(key)
        if query is not None:
            return query.column
        column: IntColumn = np.zeros(len(self._infos), np.int64)
        query = _Query(matches, column)
        for i, info in enumerate(self._infos):
            total = 0
            for group, count in info.pod_groups.items():
                if query.selects(group):
                    total += count
            column[i] = total
        if len(self._queries) >= MAX_QUERIES:
            for stale in list(self._queries)[: MAX_QUERIES // 2]:
                del self._queries[stale]
        self._queries[key] = query
        column.flags.writeable = False
        return column

    def affinity_term_counts(self, kind: str) -> Mapping[Hashable, tuple[Rows, IntColumn]]:
        view = self._term_views.get(kind)
        if view is None:
            columns = self._term_columns().get(kind, {})
            built: dict[Hashable, tuple[Rows, IntColumn]] = {}
            for term, column in columns.items():
                rows = np.flatnonzero(column)
                built[term] = (rows, column[rows])
            view = self._term_views[kind] = built
        return view

    def _term_columns(self) -> dict[str, dict[Hashable, IntColumn]]:
        if self._terms is None:
            self._terms = {kind: {} for kind in AFFINITY_KINDS}
            for i, info in enumerate(self._infos):
                self._add_terms(i, info.affinity_terms, 1)
        return self._terms

    def _add_terms(self, row: int, terms: Mapping[tuple[str, object], int], sign: int) -> None:
        """Adds `sign` x the counts of (kind, term) at a row; a term no pod carries any more
        is dropped."""
        assert self._terms is not None
        n = len(self._infos)
        totals = self._term_totals
        for kind_term, count in terms.items():
            kind, term = kind_term
            by_term = self._terms[kind]
            column = by_term.get(term)
            if column is None:
                column = by_term[term] = np.zeros(n, np.int64)
            column[row] += sign * count
            total = totals.get(kind_term, 0) + sign * count
            if total:
                totals[kind_term] = total
            else:
                totals.pop(kind_term, None)
                del by_term[term]
            self._term_views.pop(kind, None)

    # --- keeping up with the snapshot -------------------------------------------------------

    def node_changed(self, row: int, old: NodeInfo, new: NodeInfo) -> None:
        """Applies the difference between a row's old and new NodeInfo."""
        if old.pod_groups != new.pod_groups:
            delta = _difference(old.pod_groups, new.pod_groups)
            for query in self._queries.values():
                change = 0
                for group, count in delta.items():
                    if query.selects(group):
                        change += count
                if change:
                    query.column.flags.writeable = True
                    query.column[row] += change
                    query.column.flags.writeable = False
        if self._terms is not None and old.affinity_terms != new.affinity_terms:
            self._add_terms(row, _difference(old.affinity_terms, new.affinity_terms), 1)

    def rebuilt(self, infos: list[NodeInfo], source: IntColumn, fresh: list[int]) -> PodIndex:
        """This index for a table rebuilt over `infos` (a node added or removed): row i of
        the new table was row source[i] here, except the `fresh` rows, which are recounted."""
        index = PodIndex(infos)
        for key, query in self._queries.items():
            column = query.column[source]
            for i in fresh:
                column[i] = sum(
                    count for group, count in infos[i].pod_groups.items() if query.selects(group)
                )
            column.flags.writeable = False
            index._queries[key] = _Query(query.matches, column, query.memo)
        return index


K = TypeVar("K")


def _difference(old: Mapping[K, int], new: Mapping[K, int]) -> dict[K, int]:
    """new - old, per key, without the zeros."""
    delta = {key: count - old.get(key, 0) for key, count in new.items()}
    for key, count in old.items():
        if key not in new:
            delta[key] = -count
    return {key: count for key, count in delta.items() if count}
