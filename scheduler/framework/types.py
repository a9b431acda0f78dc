"""Core framework data: per-node aggregates, queued pod info, filter/score results, fit errors."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Node, Pod, PodMatchKey
from scheduler.api.resources import Resource
from scheduler.framework.events import ClusterEvent
from scheduler.framework.status import Code, Status
from scheduler.framework.status_column import IndexColumn, StatusColumn

_generation = itertools.count(1)
K = TypeVar("K")


def next_generation() -> int:
    """A process-wide increasing counter; a NodeInfo's generation changes on every mutation."""
    return next(_generation)


DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


class HostPortInfo:
    """Host ports in use on a node: ip -> {(protocol, port): count}."""

    __slots__ = ("_ports",)

    def __init__(self) -> None:
        self._ports: dict[str, dict[tuple[str, int], int]] = {}

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP"
        by_ip = self._ports.setdefault(ip, {})
        by_ip[(protocol, port)] = by_ip.get((protocol, port), 0) + 1

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP"
        by_ip = self._ports.get(ip)
        if not by_ip:
            return
        count = by_ip.get((protocol, port), 0) - 1
        if count > 0:
            by_ip[(protocol, port)] = count
        else:
            by_ip.pop((protocol, port), None)
            if not by_ip:
                del self._ports[ip]

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        """As HostPortInfo.CheckConflict: 0.0.0.0 conflicts with every IP on the same port."""
        if port <= 0:
            return False
        ip, protocol = ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP"
        key = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(key in by_ip for by_ip in self._ports.values())
        for candidate in (DEFAULT_BIND_ALL_HOST_IP, ip):
            by_ip = self._ports.get(candidate)
            if by_ip and key in by_ip:
                return True
        return False

    def __len__(self) -> int:
        return sum(len(v) for v in self._ports.values())

    def clone(self) -> HostPortInfo:
        copy = HostPortInfo()
        copy._ports = {ip: dict(ports) for ip, ports in self._ports.items()}
        return copy


class NodeInfo:
    """Everything the scheduler aggregates about one node: its pods and what they request.

    `requested` counts real requests (fit); `non_zero_requested` applies the 100m/200Mi defaults
    to cpu/memory (spreading scores). Every mutation bumps `generation` so snapshots copy only
    changed nodes.
    """

    __slots__ = (
        "affinity_terms",
        "allocatable",
        "generation",
        "name",
        "node",
        "non_zero_requested",
        "pod_groups",
        "pods",
        "requested",
        "required_anti_affinity_pods",
        "used_ports",
    )

    def __init__(self, node: Node | None = None) -> None:
        self.node: Node | None = node
        #: The node's name ("" without one); an attribute, not a property: read per node
        #: per cycle in every loop over nodes.
        self.name = node.name if node is not None else ""
        self.pods: list[Pod] = []
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = node.allocatable if node is not None else Resource()
        self.used_ports = HostPortInfo()
        #: Pods here with required pod anti-affinity (kube-scheduler's
        #: PodsWithRequiredAntiAffinity, counted): they may forbid incoming pods elsewhere too.
        self.required_anti_affinity_pods = 0
        #: Pods here by Pod.match_key, counted: what NodeTable.pod_counts sums per row.
        self.pod_groups: dict[PodMatchKey, int] = {}
        #: The pod (anti-)affinity terms of pods here, (kind, term) -> count.
        self.affinity_terms: dict[tuple[str, object], int] = {}
        self.generation = next_generation()

    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node.name
        self.allocatable = node.allocatable
        self.generation = next_generation()

    def remove_node(self) -> None:
        self.node = None
        self.name = ""
        self.generation = next_generation()

    def add_pod(self, pod: Pod) -> None:
        self.pods.append(pod)
        self._update(pod, 1)

    def remove_pod(self, pod: Pod) -> bool:
        """Removes the pod with the same UID; False when it was not on this node."""
        for i, existing in enumerate(self.pods):
            if existing.uid == pod.uid:
                last = self.pods.pop()
                if i < len(self.pods):
                    self.pods[i] = last
                self._update(existing, -1)
                return True
        return False

    def _update(self, pod: Pod, sign: int) -> None:
        self.requested.add(pod.requests, sign)
        self.requested.allowed_pod_number = 0
        self.non_zero_requested.milli_cpu += sign * pod.non0_cpu
        self.non_zero_requested.memory += sign * pod.non0_mem
        for port in pod.host_ports:
            if sign > 0:
                self.used_ports.add(port.ip, port.protocol, port.port)
            else:
                self.used_ports.remove(port.ip, port.protocol, port.port)
        _count(self.pod_groups, pod.match_key, sign)
        affinity = pod.pod_affinity
        if affinity is not None:
            if affinity.anti_required:
                self.required_anti_affinity_pods += sign
            for kind in AFFINITY_KINDS:
                for term in getattr(affinity, kind):
                    _count(self.affinity_terms, (kind, term), sign)
        self.generation = next_generation()

    def snapshot(self) -> NodeInfo:
        """A copy that later mutations of self do not affect (pods are shared, immutable)."""
        copy = NodeInfo.__new__(NodeInfo)
        copy.node = self.node
        copy.name = self.name
        copy.pods = list(self.pods)
        copy.requested = self.requested.clone()
        copy.non_zero_requested = self.non_zero_requested.clone()
        copy.allocatable = self.allocatable
        copy.used_ports = self.used_ports.clone()
        copy.required_anti_affinity_pods = self.required_anti_affinity_pods
        copy.pod_groups = dict(self.pod_groups)
        copy.affinity_terms = dict(self.affinity_terms)
        copy.generation = self.generation
        return copy

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)}, requested={self.requested!r})"


#: The term lists of PodAffinity, as NodeTable.affinity_term_counts names them.
AFFINITY_KINDS = ("required", "preferred", "anti_required", "anti_preferred")


def _count(counts: dict[K, int], key: K, sign: int) -> None:
    value = counts.get(key, 0) + sign
    if value:
        counts[key] = value
    else:
        counts.pop(key, None)


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod in the scheduling queue with what the queue knows about its history."""

    pod: Pod
    timestamp: float = 0.0
    attempts: int = 0
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    backoff_expiration: float = 0.0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""
    gating_plugin_events: tuple[ClusterEvent, ...] = ()
    was_flushed_from_unschedulable: bool = False
    # Opportunistic batching's signature of the pod (None: never batched), set by the queue.
    pod_signature: bytes | None = None

    @property
    def gated(self) -> bool:
        return bool(self.gating_plugin)

    @property
    def key(self) -> str:
        return self.pod.key


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """A PreFilter plugin's narrowing of the candidate nodes; None node_names means all."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.all_nodes():
            return self
        if self.all_nodes():
            return other
        assert self.node_names is not None and other.node_names is not None
        return PreFilterResult(self.node_names & other.node_names)


class NominatingMode:
    NOOP = 0
    OVERRIDE = 1


@dataclass(frozen=True, slots=True)
class NominatingInfo:
    nominated_node_name: str = ""
    mode: int = NominatingMode.NOOP


# Clears status.nominatedNodeName (after a failure that nominated nothing).
CLEAR_NOMINATED_NODE = NominatingInfo("", NominatingMode.OVERRIDE)


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """How the pod's nomination changes. `plugin_owns_nomination`: the plugin has nominated the
    pod in memory and writes (or reverts) status.nominatedNodeName itself, as asynchronous
    preemption does, so the failure handler leaves the nomination alone. `node` and `victims`
    (namespace/name) say where a preemption made room and whom it evicts, for the pod's
    explanation."""

    nominating_info: NominatingInfo | None = None
    plugin_owns_nomination: bool = False
    node: str = ""
    victims: tuple[str, ...] = ()


class NodeToStatus:
    """Filter outcomes per node name; nodes not listed get `absent_status`.

    kube-scheduler's NodeToStatus: when PreFilter narrowed the candidate set, nodes outside it
    are UnschedulableAndUnresolvable without being listed. Every node's status at once
    (`set_rows`) is kept as a StatusColumn and turned into the per-name map only when a node is
    asked for: a failure message needs just the counts.
    """

    __slots__ = ("_map", "_rows", "absent_status")

    def __init__(self) -> None:
        self._map: dict[str, Status] = {}
        self._rows: _Rows | None = None
        self.absent_status: Status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def set(self, node_name: str, status: Status) -> None:
        self._listed()[node_name] = status

    def set_rows(
        self,
        names: Sequence[str],
        index: Mapping[str, int],
        rows: IndexColumn,
        column: StatusColumn,
        infos: Sequence[NodeInfo] | None = None,
    ) -> None:
        """`names[rows[i]]` gets `column`'s status of row i (`index`: name -> row, the inverse
        of `names`; `infos`: the NodeInfos in `names`' order, when the caller has them, for
        `nodes_with_code` over them without a per-name map); rows that pass are not listed."""
        self._listed()
        self._rows = _Rows(names, index, rows, column, infos)

    def get(self, node_name: str) -> Status:
        pending = self._rows
        if pending is not None:
            status = pending.get(node_name)
            if status is not None:
                return status
        return self._map.get(node_name, self.absent_status)

    def __len__(self) -> int:
        if self._rows is not None and not self._map:
            return self._rows.listed()
        return len(self._listed())

    def items(self) -> Iterator[tuple[str, Status]]:
        return iter(self._listed().items())

    def status_counts(self) -> list[tuple[Status, int]]:
        """Each distinct Status object listed, with how many nodes have it."""
        if self._rows is not None and not self._map:
            return self._rows.column.present()
        statuses = self._listed().values()
        by_id = {id(s): s for s in statuses}
        return [(by_id[key], n) for key, n in Counter(map(id, statuses)).items()]

    def _listed(self) -> dict[str, Status]:
        """The per-name map, with the rows of `set_rows` added (in their order) first."""
        if self._rows is not None:
            self._map.update(self._rows.pairs())
            self._rows = None
        return self._map

    def compact(self) -> tuple[Sequence[str], IndexColumn, StatusColumn] | None:
        """The rows of `set_rows` as they were given (names, rows into them, their column),
        while no per-name map was built from them (None after a `set` or a per-name read):
        a reader that keeps every node's status keeps these instead of a map."""
        pending = self._rows
        if pending is None or self._map:
            return None
        return pending.names, pending.rows, pending.column

    def nodes_with_code(self, infos: list[NodeInfo], code: Code) -> list[NodeInfo]:
        """The nodes of `infos`, in order, whose status has `code`."""
        pending = self._rows
        if pending is not None and pending.infos is infos:
            hit = pending.with_code(code, self.absent_status, self._map)
            return [infos[i] for i in np.flatnonzero(hit).tolist()]
        get = self._listed().get  # one map for every node (not a `get` per node on the rows)
        if self.absent_status.code == code:
            absent = self.absent_status
            return [info for info in infos if get(info.name, absent).code == code]
        return [info for info in infos if (s := get(info.name)) is not None and s.code == code]


@dataclass(frozen=True, slots=True)
class _Rows:
    """Statuses of `set_rows` not yet turned into NodeToStatus's per-name map."""

    names: Sequence[str]
    index: Mapping[str, int]
    rows: IndexColumn
    column: StatusColumn
    infos: Sequence[NodeInfo] | None

    def with_code(
        self, code: Code, absent: Status, earlier: Mapping[str, Status]
    ) -> npt.NDArray[np.bool_]:
        """Per name, whether its status has `code`: these rows' where listed, else the one
        set `earlier` (before these rows, which win over it), else `absent`."""
        hit = np.full(len(self.names), absent.code == code, np.bool_)
        for name, status in earlier.items():
            row = self.index.get(name)
            if row is not None:
                hit[row] = status.code == code
        statuses = self.column.statuses
        listed = np.array([s is not None for s in statuses], np.bool_)[self.column.of_row]
        coded = np.array([s is not None and s.code == code for s in statuses], np.bool_)
        hit[self.rows[listed]] = coded[self.column.of_row[listed]]
        return hit

    def get(self, node_name: str) -> Status | None:
        row = self.index.get(node_name)
        if row is None:
            return None
        at = np.flatnonzero(self.rows == row)
        return self.column.statuses[int(self.column.of_row[at[0]])] if len(at) else None

    def listed(self) -> int:
        """How many rows have a status."""
        return sum(n for _, n in self.column.present())

    def pairs(self) -> Iterator[tuple[str, Status]]:
        names = map(self.names.__getitem__, self.rows.tolist())
        named = zip(names, self.column.to_list(), strict=True)
        return ((name, s) for name, s in named if s is not None)


@dataclass(slots=True)
class Diagnosis:
    """Why a pod did not fit: per-node statuses and the plugins that rejected it."""

    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


class FitError(Exception):
    """The pod fits on no node; `message` follows kube-scheduler's format exactly."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        return self.message()

    def message(self) -> str:
        """As FitError.Error(): reason counts sorted as strings, absent nodes included."""
        text = f"0/{self.num_all_nodes} nodes are available:"
        diag = self.diagnosis
        if diag.pre_filter_msg:
            text += f" {diag.pre_filter_msg}."
        else:
            counts: dict[str, int] = {}
            # Nodes share Status objects (a plugin's column wording): count each object's
            # nodes, then its reasons once.
            for status, nodes in diag.node_to_status.status_counts():
                for reason in status.reasons:
                    counts[reason] = counts.get(reason, 0) + nodes
            absent = self.num_all_nodes - len(diag.node_to_status)
            if absent > 0:
                for reason in diag.node_to_status.absent_status.reasons:
                    counts[reason] = counts.get(reason, 0) + absent
            if counts:
                text += " " + ", ".join(sorted(f"{n} {r}" for r, n in counts.items())) + "."
        if diag.post_filter_msg:
            text += f" {diag.post_filter_msg}"
        return text
