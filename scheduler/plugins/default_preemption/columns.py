"""The counting dry run over many candidate nodes at once.

When the cycle's Filter is a room check on each node (every counting plugin a RequestFitFilter,
every other plugin reading only the Node), choosing the victims on a node is arithmetic on a few
numbers per node: its pod count and requests with every lower-priority pod removed, those of the
pods nominated to it, and each potential victim's. Done node by node (`_select_by_counting` in
plugin.py) a preemptor's dry run makes a handful of Python Filter calls per candidate node; here
the same removals, check and reprieve walk run as numpy column operations over all the nodes of
a chunk, one step per victim position. Victim order and PDB accounting stay per node (Python), as
they are exactly the node-by-node path's.

A node whose check fails even with every potential victim gone (a preemptor late in a burst
meets thousands: every node's room already nominated) gets the Filter's Status without a call per
node when every plugin that reads only the Node has a batch column saying it passes there: the
room rules' Status depends only on the node's allocatable and on which of their checks fail
(RequestFitFilter), so one node per such case is worded and the others share its Status. The
rest are left to the node-by-node path (the caller's).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    CountingCheck,
    CycleState,
    NodeInfo,
    NodeTable,
    Pod,
    PodDisruptionBudget,
    Resource,
    Status,
    importance_key,
    split_by_pdb_violation,
)

#: Room on a resource no rule checks: never reached by a sum of requests.
_UNCHECKED = 2**62

Victims = tuple[list[Pod], int, Status | None]
IntMatrix = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _Dims:
    """The resources some rule checks, as column positions after the pod count (column 0)."""

    cpu: bool
    memory: bool
    storage: bool
    scalar: tuple[str, ...]

    @staticmethod
    def of(rules: list[Resource]) -> _Dims:
        return _Dims(
            any(r.milli_cpu > 0 for r in rules),
            any(r.memory > 0 for r in rules),
            any(r.ephemeral_storage > 0 for r in rules),
            tuple(sorted({name for r in rules for name, q in r.scalar.items() if q > 0})),
        )

    def matrix(self, amounts: list[Resource], pods: list[int]) -> IntMatrix:
        """One row per resource list: `pods` then the checked amounts, in column order."""
        columns = [pods]
        if self.cpu:
            columns.append([r.milli_cpu for r in amounts])
        if self.memory:
            columns.append([r.memory for r in amounts])
        if self.storage:
            columns.append([r.ephemeral_storage for r in amounts])
        columns.extend([r.scalar.get(name, 0) for r in amounts] for name in self.scalar)
        return np.array(columns, dtype=np.int64).reshape(len(columns), len(amounts)).T

    def checks(self, rule: Resource) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """The rule's amounts in column order (one pod for the count) and which columns it
        checks (the count, and each amount it names)."""
        need = self.matrix([rule], [1])[0]
        checked = need > 0
        checked[0] = True
        return need, checked

    def failing(self, rules: list[Resource], allocatable: IntMatrix, used: IntMatrix) -> IntMatrix:
        """Per node, which checks of each rule fail with `used` on it (0/1, rule by rule)."""
        parts = []
        for rule in rules:
            need, checked = self.checks(rule)
            parts.append(checked & (used + need > allocatable))
        return np.concatenate(parts, axis=1).astype(np.int64)

    def room(self, rules: list[Resource], allocatable: IntMatrix) -> IntMatrix:
        """Per node, the most each column may hold for every rule to pass: allocatable less the
        rule's amount where it checks that column, else unbounded; the tightest over the
        rules."""
        room = np.full_like(allocatable, _UNCHECKED)
        for rule in rules:
            need, checked = self.checks(rule)
            room = np.minimum(room, np.where(checked, allocatable - need, _UNCHECKED))
        return room


@dataclass(frozen=True, slots=True)
class _Walk:
    """One candidate node's reprieve order: PDB-violating victims first, then the others,
    each part most important first (as `_reprieve_walk` in plugin.py)."""

    index: int
    info: NodeInfo
    order: list[Pod]
    num_violating: int
    mixed: bool  # both parts non-empty: the chosen victims are re-sorted by importance


def select_by_columns(
    counting: CountingCheck,
    rules: list[Resource],
    state: CycleState,
    pod: Pod,
    nodes: list[tuple[int, NodeInfo, list[Pod]]],
    pdbs: list[PodDisruptionBudget],
    table: NodeTable,
) -> dict[int, Victims]:
    """Victims for each (index, node, its potential victims) of `nodes`, keyed by index
    (`table`: the snapshot's). Nodes where the pod does not fit even with every potential
    victim gone, and whose Status cannot be shared (module docstring), are left out: the
    caller words their Status node by node."""
    if not nodes:
        return {}
    dims = _Dims.of(rules)
    key = importance_key(time.time())
    infos = [info for _, info, _ in nodes]
    allocatable = dims.matrix(
        [i.allocatable for i in infos], [i.allocatable.allowed_pod_number for i in infos]
    )
    room = dims.room(rules, allocatable)
    used = dims.matrix([i.requested for i in infos], [len(i.pods) for i in infos])
    nominated_on = counting.nominated_by_node(pod)
    at: list[int] = []
    others: list[Pod] = []
    for row, info in enumerate(infos):
        nominated = nominated_on.get(info.name)
        if nominated:
            at.extend([row] * len(nominated))
            others.extend(nominated)
    if others:
        np.add.at(used, at, dims.matrix([o.requests for o in others], [1] * len(others)))
    walks: list[_Walk] = []
    for index, info, potential in nodes:
        ordered = sorted(potential, key=key)
        violating, non_violating = split_by_pdb_violation(ordered, pdbs)
        order = violating + non_violating
        walks.append(_Walk(index, info, order, len(violating), bool(violating and non_violating)))
    victims = [v for walk in walks for v in walk.order]
    emptied, fits, chosen = _reprieve_columns(
        used,
        room,
        dims.matrix([v.requests for v in victims], [1] * len(victims)),
        np.array([len(walk.order) for walk in walks], dtype=np.intp),
    )
    node_only_pass = _node_only_pass(counting, state, pod, table, infos)
    found: dict[int, Victims] = {}
    if not fits.all():
        misfits = np.flatnonzero(~fits)
        failing = dims.failing(rules, allocatable[misfits], emptied[misfits])
        cases = np.concatenate([allocatable[misfits], failing], axis=1)
        worded: dict[int, Status | None] = {}
        for row, case in zip(misfits.tolist(), _case_ids(cases), strict=True):
            if not node_only_pass[row]:
                continue  # worded node by node by the caller
            walk = walks[row]
            if case not in worded:
                worded[case] = _status_without(counting, state, pod, walk.info, walk.order)
            status = worded[case]
            if status is not None:
                found[walk.index] = ([], 0, status)
    for row, walk in enumerate(walks):
        if not fits[row]:
            continue
        if not node_only_pass[row]:
            status = counting.node_only_status(state, pod, walk.info)
            if status is not None:
                found[walk.index] = ([], 0, status)
                continue
        picked = chosen[row]
        taken = [v for k, v in enumerate(walk.order) if picked[k]]
        if walk.mixed:
            taken.sort(key=key)
        violations = int(picked[: walk.num_violating].sum()) if walk.num_violating else 0
        found[walk.index] = (taken, violations, None)
    return found


def _node_only_pass(
    counting: CountingCheck, state: CycleState, pod: Pod, table: NodeTable, infos: list[NodeInfo]
) -> list[bool]:
    """Per node of `infos`, whether the plugins that read only the Node are known to pass
    there (their batch columns say so); False: unknown, or one rejects."""
    passes = counting.node_only_passes(state, pod, table)
    if passes is None:
        return [False] * len(infos)
    rows = [table.index.get(info.name) for info in infos]
    return [row is not None and bool(passes[row]) for row in rows]


def _case_ids(cases: IntMatrix) -> list[int]:
    """Per row, an id shared exactly by the rows equal to it (the misfits' cases: one node
    of each is worded, the others share its Status). Keyed by each row's bytes: a chunk has
    tens of rows, where np.unique(axis=0)'s structured sort costs ten times as much."""
    ids: dict[bytes, int] = {}
    data = np.ascontiguousarray(cases).tobytes()
    width = cases.shape[1] * cases.itemsize
    return [ids.setdefault(data[at : at + width], len(ids)) for at in range(0, len(data), width)]


def _status_without(
    counting: CountingCheck, state: CycleState, pod: Pod, info: NodeInfo, potential: list[Pod]
) -> Status | None:
    """The Filter's Status (with the pods nominated there) on `info` without `potential`,
    asking only the counting plugins: the caller knows the Node-only ones pass there."""
    requested, count = without(info, potential)
    nominated = counting.nominated_pods(pod, info.name)
    return counting.with_nominated(state, pod, info, requested, count, nominated, counts_only=True)


def without(info: NodeInfo, potential: list[Pod]) -> tuple[Resource, int]:
    """The node's requests and pod count with `potential` removed."""
    requested = info.requested.clone()
    for victim in potential:
        requested.add(victim.requests, -1)
    return requested, len(info.pods) - len(potential)


def _reprieve_columns(
    used: IntMatrix, room: IntMatrix, victims: IntMatrix, lengths: npt.NDArray[np.intp]
) -> tuple[IntMatrix, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Per node (row of `used`: its columns with the nominated pods, before removing any
    victim): its columns with every potential victim removed, does the pod fit then, and
    which victim positions stay victims after the walk (each given back in turn, kept if the
    pod still fits). `victims` holds every node's victims in walk order, `lengths[row]` of them
    per node."""
    n, width = len(lengths), int(lengths.max(initial=0))
    starts = np.cumsum(lengths) - lengths
    node_of = np.repeat(np.arange(n), lengths)
    position = np.arange(len(victims)) - np.repeat(starts, lengths)
    step = np.zeros((n, width, used.shape[1]), dtype=np.int64)
    step[node_of, position] = victims
    valid = np.arange(width) < lengths[:, None]
    current = emptied = used - step.sum(axis=1)
    fits = (current <= room).all(axis=1)
    chosen = np.zeros((n, width), dtype=np.bool_)
    for k in range(width):
        trial = current + step[:, k]
        keep = valid[:, k] & (trial <= room).all(axis=1)
        current = np.where(keep[:, None], trial, current)
        chosen[:, k] = valid[:, k] & ~keep
    return emptied, fits, chosen
