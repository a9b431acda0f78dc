"""The record of each pod's latest scheduling attempt, kept so "why is my pod Pending" (or "why
this node") can be answered node by node and plugin by plugin after the fact.

The cycle fills an `Attempt` as it goes (PreFilter, Filter, Score, PostFilter, Permit,
binding); `ExplainStore` keeps the latest one per pod, at most `max_pods` of them, least
recently attempted evicted first, and drops a pod's record when the pod is deleted.

Compact by construction: a failed attempt's per-node verdicts are the filter pass's own
StatusColumn (each distinct Status once) turned into one small integer per node, in the
snapshot's node order, against a reference to the snapshot's list of names (shared, not
copied): at 5000 nodes one byte per node. Scores keep only the best `SCORE_NODES` nodes' raw,
normalised and weighted scores, taken from the arrays scoring already computed: the cycle only
keeps references to them, and the binding cycle (off the scheduling loop) picks the best nodes
and lets the arrays go.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod
from scheduler.framework.node_table import NodeTable
from scheduler.framework.status import Status
from scheduler.framework.types import NodeToStatus, NominatingMode, PostFilterResult

#: How many of the scored nodes, best first, keep their per-plugin scores.
SCORE_NODES = 20
#: How many tied best nodes are named.
TIE_NAMES = 20

Json = dict[str, Any]


def _small_index(n: int) -> type[np.unsignedinteger[Any]]:
    """The narrowest unsigned type that holds indexes below `n`."""
    if n <= 1 << 8:
        return np.uint8
    if n <= 1 << 16:
        return np.uint16
    return np.uint32


@dataclass(frozen=True, slots=True)
class FilterVerdicts:
    """Every node's Filter verdict: `statuses[of_node[i]]` is `names[i]`'s (None: passed)."""

    names: Sequence[str]
    statuses: list[Status | None]
    of_node: npt.NDArray[np.unsignedinteger[Any]]

    @classmethod
    def of(
        cls, node_to_status: NodeToStatus, names: Sequence[str], index: Mapping[str, int]
    ) -> FilterVerdicts:
        """From a diagnosis over the snapshot whose node names are `names` (`index`: name ->
        position). Nodes the diagnosis does not list have its absent status."""
        compact = node_to_status.compact()
        at = np.zeros(len(names), np.intp)
        if compact is not None and compact[0] is names:
            _, rows, column = compact
            statuses: list[Status | None] = [node_to_status.absent_status, *column.statuses]
            at[rows] = column.of_row + 1
        else:
            slot: dict[int, int] = {}
            statuses = [node_to_status.absent_status]
            for name, status in node_to_status.items():
                row = index.get(name)
                if row is None:
                    continue
                i = slot.get(id(status))
                if i is None:
                    i = slot[id(status)] = len(statuses)
                    statuses.append(status)
                at[row] = i
        # Plugins that run node by node return equal Statuses as distinct objects: one each.
        distinct: dict[tuple[Any, ...], int] = {}
        same = np.empty(len(statuses), np.intp)
        for i, each in enumerate(statuses):
            key = (None,) if each is None else (each.code, each.plugin, *each.reasons)
            same[i] = distinct.setdefault(key, len(distinct))
        if len(distinct) < len(statuses):
            kept: list[Status | None] = [None] * len(distinct)
            for i, each in enumerate(statuses):
                kept[int(same[i])] = each
            statuses, at = kept, same[at]
        return cls(names, statuses, at.astype(_small_index(len(statuses))))

    def groups(self) -> list[tuple[int, int]]:
        """(status index, node count) for each status some node has, most nodes first."""
        counts = np.bincount(self.of_node, minlength=len(self.statuses)).tolist()
        present = [(i, n) for i, n in enumerate(counts) if n]
        return sorted(present, key=lambda pair: (-pair[1], pair[0]))

    def status_of(self, node: str) -> Status | None:
        for i, name in enumerate(self.names):
            if name == node:
                return self.statuses[int(self.of_node[i])]
        raise KeyError(node)

    def nbytes(self) -> int:
        return int(self.of_node.nbytes)


@dataclass(frozen=True, slots=True)
class ScoreTable:
    """The best scored nodes with each Score plugin's raw, normalised and weighted score."""

    scored: int
    nodes: list[str]
    plugins: list[str]
    weights: list[int]
    raw: list[npt.NDArray[np.int64]]  # per plugin, per kept node
    normalized: list[npt.NDArray[np.int64]]
    totals: npt.NDArray[np.int64]
    best: int  # how many nodes share the best total
    tied: list[str]  # up to TIE_NAMES of them, when more than one

    @classmethod
    def of(
        cls,
        names: Sequence[str],
        rows: npt.NDArray[np.intp],
        raw: Mapping[str, npt.NDArray[np.int64]],
        normalized: Mapping[str, npt.NDArray[np.int64]],
        weights: Mapping[str, int],
        totals: npt.NDArray[np.int64],
    ) -> ScoreTable:
        """From one scoring pass: the snapshot's names, the scored rows, the arrays per plugin
        (in `rows`' order) and the weighted totals. Runs in the scheduling cycle: a few
        array operations over the scored nodes, the rest on the kept ones only."""
        n = len(totals)
        if n > SCORE_NODES:
            top = np.argpartition(totals, n - SCORE_NODES)[n - SCORE_NODES :]
            keep = top[np.argsort(-totals[top], kind="stable")]
        else:
            keep = np.argsort(-totals, kind="stable")
        plugins = [name for name in normalized if name in raw]
        best = 0
        tied: list[str] = []
        if n:
            at_best = totals == totals[keep[0]]
            best = int(np.count_nonzero(at_best))
            if best > 1:
                tied = [names[r] for r in rows[np.flatnonzero(at_best)[:TIE_NAMES]].tolist()]
        return cls(
            scored=n,
            nodes=[names[r] for r in rows.take(keep).tolist()],
            plugins=plugins,
            weights=[int(weights.get(p, 1)) for p in plugins],
            raw=[raw[p].take(keep) for p in plugins],
            normalized=[normalized[p].take(keep) for p in plugins],
            totals=totals.take(keep),
            best=best,
            tied=tied,
        )

    def to_json(self) -> Json:
        nodes = []
        for j, name in enumerate(self.nodes):
            raw = {p: int(self.raw[i][j]) for i, p in enumerate(self.plugins)}
            norm = {p: int(self.normalized[i][j]) for i, p in enumerate(self.plugins)}
            weighted = {
                p: int(self.normalized[i][j]) * self.weights[i] for i, p in enumerate(self.plugins)
            }
            nodes.append(
                {
                    "node": name,
                    "total": int(self.totals[j]),
                    "raw": raw,
                    "normalized": norm,
                    "weighted": weighted,
                }
            )
        return {
            "scoredNodes": self.scored,
            "weights": dict(zip(self.plugins, self.weights, strict=True)),
            "nodes": nodes,
            "bestTotalNodes": self.best,
            "tiedNodes": self.tied,
        }


#: What ScoreTable.of reads: names, rows, raw and normalised scores per plugin, weights, totals.
ScoreArrays = tuple[
    Sequence[str],
    npt.NDArray[np.intp],
    Mapping[str, npt.NDArray[np.int64]],
    Mapping[str, npt.NDArray[np.int64]],
    Mapping[str, int],
    npt.NDArray[np.int64],
]


def status_json(status: Status | None) -> Json:
    if status is None:
        return {"code": "Success", "plugin": "", "reasons": []}
    return {"code": status.code.label(), "plugin": status.plugin, "reasons": list(status.reasons)}


@dataclass(slots=True)
class Attempt:
    """One pod's latest scheduling attempt, filled in as the cycle goes."""

    namespace: str
    name: str
    uid: str
    profile: str
    time: float
    #: Scheduled, Binding, WaitingOnPermit, Unschedulable or SchedulerError.
    outcome: str = "Scheduling"
    #: The PodScheduled=False condition's message (kube-scheduler's aggregated line).
    message: str = ""
    num_nodes: int = 0
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    pre_filter_narrowed: int | None = None
    pre_filter_plugins: list[str] = field(default_factory=list)
    pre_filter_rejection: Status | None = None
    #: ("nominated node" or "batching hint", node, whether it fit): tried before all nodes.
    tried_first: tuple[str, str, bool] | None = None
    filter: FilterVerdicts | None = None
    #: The scoring pass's arrays as scoring left them, until `compact` keeps the best nodes.
    score_arrays: ScoreArrays | None = None
    compacted_scores: ScoreTable | None = None
    selected: str = ""
    post_filter_message: str = ""
    nominated_node: str | None = None
    victims: list[str] = field(default_factory=list)
    permit_waits: dict[str, float] = field(default_factory=dict)
    binding_error: str = ""
    #: The PostFilter outcome of the attempt before, when it preempted (nominated a node):
    #: a preemptor's next attempt is usually the one that places it.
    earlier_preemption: Json | None = None

    def scored(self, arrays: ScoreArrays) -> None:
        """Keeps references to the scoring pass's arrays: no work in the scheduling cycle."""
        self.score_arrays = arrays

    @property
    def scores(self) -> ScoreTable | None:
        self.compact()
        return self.compacted_scores

    def compact(self) -> None:
        """Keeps the best nodes' scores and lets the arrays go (the binding cycle calls it,
        off the scheduling loop; a reader does if it comes first)."""
        arrays = self.score_arrays
        if arrays is not None:
            self.compacted_scores = ScoreTable.of(*arrays)
            self.score_arrays = None

    def unschedulable(self, node_to_status: NodeToStatus, table: NodeTable) -> None:
        """The pod fits nowhere: every node's verdict, from the diagnosis over `table`."""
        self.filter = FilterVerdicts.of(node_to_status, table.names, table.index)

    def post_filter(self, status: Status, result: PostFilterResult | None) -> None:
        """PostFilter's (preemption's) outcome: its message, the node it nominated and the
        pods it evicts there."""
        self.post_filter_message = status.message()
        if result is None:
            return
        nominating = result.nominating_info
        if result.node:
            self.nominated_node = result.node
        elif nominating is not None and nominating.mode == NominatingMode.OVERRIDE:
            self.nominated_node = nominating.nominated_node_name
        self.victims = list(result.victims)

    def permitted(self, waits: Mapping[str, float] | None) -> None:
        """Permit passed (binding follows) or, with `waits`, the pod waits on those plugins."""
        self.outcome = "Binding" if waits is None else "WaitingOnPermit"
        if waits is not None:
            self.permit_waits = dict(waits)

    def preemption(self) -> Json | None:
        """This attempt's preemption, if it nominated a node (else None)."""
        if not self.nominated_node:
            return None
        return {
            "time": self.time,
            "message": self.post_filter_message,
            "nominatedNode": self.nominated_node,
            "victims": list(self.victims),
        }

    def to_json(self) -> Json:
        out: Json = {
            "pod": {"namespace": self.namespace, "name": self.name, "uid": self.uid},
            "profile": self.profile,
            "time": self.time,
            "outcome": self.outcome,
            "message": self.message,
            "nodes": self.num_nodes,
            "evaluatedNodes": self.evaluated_nodes,
            "feasibleNodes": self.feasible_nodes,
        }
        pre: Json = {"plugins": sorted(self.pre_filter_plugins)}
        if self.pre_filter_narrowed is not None:
            pre["narrowedTo"] = self.pre_filter_narrowed
        if self.pre_filter_rejection is not None:
            pre["rejection"] = status_json(self.pre_filter_rejection)
        out["preFilter"] = pre
        if self.tried_first is not None:
            how, node, fit = self.tried_first
            out["triedFirst"] = {"as": how, "node": node, "fit": fit}
        if self.filter is not None:
            verdicts = self.filter
            out["filter"] = {
                "statuses": [status_json(s) for s in verdicts.statuses],
                "groups": [{"status": i, "nodes": n} for i, n in verdicts.groups()],
                "nodes": dict(zip(verdicts.names, verdicts.of_node.tolist(), strict=True)),
            }
        scores = self.scores
        if scores is not None:
            out["score"] = scores.to_json()
        if self.selected:
            out["selectedNode"] = self.selected
        if self.post_filter_message or self.nominated_node is not None:
            out["postFilter"] = {
                "message": self.post_filter_message,
                "nominatedNode": self.nominated_node or "",
                "victims": list(self.victims),
            }
        if self.earlier_preemption is not None:
            out["earlierPreemption"] = self.earlier_preemption
        if self.permit_waits:
            out["permit"] = {"waitingFor": dict(self.permit_waits)}
        if self.binding_error:
            out["bindingError"] = self.binding_error
        return out


class ExplainStore:
    """The latest Attempt per pod, at most `max_pods`, least recently attempted evicted first.

    Written by the scheduling loop and the binding workers, read by the HTTP server: one lock
    around the maps (an Attempt's own fields are plain assignments)."""

    def __init__(self, max_pods: int) -> None:
        if max_pods < 1:
            raise ValueError(f"max_pods must be at least 1, got {max_pods}")
        self.max_pods = max_pods
        self._by_uid: OrderedDict[str, Attempt] = OrderedDict()
        self._uid_of: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def begin(self, pod: Pod, profile: str, now: float) -> Attempt:
        """A new attempt of `pod`, replacing its previous record."""
        attempt = Attempt(pod.namespace, pod.name, pod.uid, profile, now)
        with self._lock:
            old = self._uid_of.get((pod.namespace, pod.name))
            if old is not None and old != pod.uid:
                self._by_uid.pop(old, None)
            before = self._by_uid.get(pod.uid)
            if before is not None:
                attempt.earlier_preemption = before.preemption() or before.earlier_preemption
            self._by_uid[pod.uid] = attempt
            self._by_uid.move_to_end(pod.uid)
            self._uid_of[(pod.namespace, pod.name)] = pod.uid
            while len(self._by_uid) > self.max_pods:
                _, evicted = self._by_uid.popitem(last=False)
                key = (evicted.namespace, evicted.name)
                if self._uid_of.get(key) == evicted.uid:
                    del self._uid_of[key]
        return attempt

    def current(self, uid: str) -> Attempt | None:
        """The pod's latest attempt (for the steps after the scheduling cycle)."""
        with self._lock:
            return self._by_uid.get(uid)

    def find(self, namespace: str, name: str) -> Attempt | None:
        with self._lock:
            uid = self._uid_of.get((namespace, name))
            return None if uid is None else self._by_uid.get(uid)

    def forget(self, pod: Pod) -> None:
        """The pod was deleted: its record goes."""
        with self._lock:
            self._by_uid.pop(pod.uid, None)
            key = (pod.namespace, pod.name)
            if self._uid_of.get(key) == pod.uid:
                del self._uid_of[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_uid)
