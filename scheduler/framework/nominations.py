"""The nominations at one instant, and which of them count against a pod.

A preempting burst asks every cycle, over a thousand nominations that rarely changed since the
cycle before, which nominated pods count against the pod on each node. The nominator hands out
one read-only `Nominations` per change of its nominations (shallow copies of its maps: its
per-node lists are replaced, never changed, once handed out), with what every reader needs
ready: each pod's node and the lowest priority among them. When every nominated pod counts
against the asking pod (priority >= its own: a burst of one priority), the answer is a copy of
the map without the pod's own nomination, made in C rather than filtered pod by pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod
from scheduler.framework.pod_requests import PodRequestColumns

_Key = TypeVar("_Key", str, int)


class Nominations:
    """Read-only: the nominated pods by node, each pod's node (by uid), the lowest priority."""

    __slots__ = ("_columns", "_rows", "by_node", "lowest", "node_of")

    def __init__(
        self, by_node: Mapping[str, Sequence[Pod]], node_of: Mapping[str, str], lowest: int
    ) -> None:
        self.by_node = by_node
        self.node_of = node_of
        self.lowest = lowest
        #: by_node keyed by row of one node table's index (that index, those rows).
        self._rows: tuple[Mapping[str, int], dict[int, Sequence[Pod]]] | None = None
        #: Every nominated pod on the rows of one index, as request columns, with each one's
        #: priority and each uid's position (that index, those columns).
        self._columns: tuple[Mapping[str, int], _RowColumns] | None = None

    @staticmethod
    def of(by_node: Mapping[str, Sequence[Pod]]) -> Nominations:
        """Built from a map alone (tests and fakes; the nominator keeps the parts up to date)."""
        node_of = {p.uid: node for node, pods in by_node.items() for p in pods}
        lowest = min((p.priority for pods in by_node.values() for p in pods), default=0)
        return Nominations({n: pods for n, pods in by_node.items() if pods}, node_of, lowest)

    def counting_against(self, pod: Pod) -> dict[str, Sequence[Pod]]:
        """Per node with some, the nominated pods that count against `pod` there."""
        return self._against(pod, self.by_node, self.node_of.get(pod.uid))

    def rows_counting_against(self, pod: Pod, index: Mapping[str, int]) -> dict[int, Sequence[Pod]]:
        """`counting_against` keyed by each node's row in `index` (nodes not in it left out)."""
        rows = self._rows_of(index)
        own = self.node_of.get(pod.uid)
        return self._against(pod, rows, None if own is None else index.get(own))

    def requests_counting_against(self, pod: Pod, index: Mapping[str, int]) -> PodRequestColumns:
        """The pods of `rows_counting_against`, as request columns (in no promised order)."""
        columns = self._columns_of(index)
        own = columns.position.get(pod.uid)
        if pod.priority > self.lowest:
            keep = columns.priority >= pod.priority
        elif own is None:
            return columns.requests
        else:
            keep = np.ones(len(columns.priority), np.bool_)
        if own is not None:
            keep[own] = False
        return columns.requests.where(keep)

    def _columns_of(self, index: Mapping[str, int]) -> _RowColumns:
        """Built once per view and node table, as `_rows_of`."""
        cached = self._columns
        if cached is not None and cached[0] is index:
            return cached[1]
        rows = self._rows_of(index)
        pods = [p for held in rows.values() for p in held]
        columns = _RowColumns(
            PodRequestColumns.of(rows),
            np.array([p.priority for p in pods], np.int64),
            {p.uid: at for at, p in enumerate(pods)},
        )
        self._columns = (index, columns)
        return columns

    def _rows_of(self, index: Mapping[str, int]) -> dict[int, Sequence[Pod]]:
        """by_node by row of `index`: mapped once per node table (the loop's only thread
        asks; a table is rebuilt only when nodes come or go)."""
        cached = self._rows
        if cached is not None and cached[0] is index:
            return cached[1]
        rows: dict[int, Sequence[Pod]] = {}
        for name, pods in self.by_node.items():
            row = index.get(name)
            if row is not None:
                rows[row] = pods
        self._rows = (index, rows)
        return rows

    def _against(
        self, pod: Pod, by_key: Mapping[_Key, Sequence[Pod]], own: _Key | None
    ) -> dict[_Key, Sequence[Pod]]:
        if pod.priority > self.lowest:
            found = ((key, counting_against(pod, pods)) for key, pods in by_key.items())
            return {key: pods for key, pods in found if pods}
        result = dict(by_key)
        if own is not None and own in result:
            others = counting_against(pod, result[own])
            if others:
                result[own] = others
            else:
                del result[own]
        return result


class _RowColumns:
    """A view's nominated pods as request columns, their priorities, and each one's position
    by uid (in the columns' order)."""

    __slots__ = ("position", "priority", "requests")

    def __init__(
        self,
        requests: PodRequestColumns,
        priority: npt.NDArray[np.int64],
        position: dict[str, int],
    ) -> None:
        self.requests = requests
        self.priority = priority
        self.position = position


NO_NOMINATIONS = Nominations({}, {}, 0)


def counting_against(pod: Pod, nominated: Sequence[Pod]) -> list[Pod]:
    """The nominated pods that count against `pod` on their node: priority >= its own,
    other than itself."""
    return [p for p in nominated if p.priority >= pod.priority and p.uid != pod.uid]
