"""Per-node numbers as numpy columns, in snapshot order, for vectorised Filter and Score.

A row per node; `update_row` rewrites one row when a node changes, and a table rebuilt after a
node was added or removed gathers the unchanged rows from the previous table, so keeping the
table in step with the snapshot costs Python work only for the changed nodes. Plugins with a
`filter_batch`/`score_batch` read these columns instead of looping over NodeInfo objects.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Iterable, Mapping

import numpy as np
import numpy.typing as npt

from scheduler.api.labels import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    IN,
    LT,
    NOT_IN,
    Requirement,
    parse_go_int,
)
from scheduler.api.objects import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, Node, Pod
from scheduler.framework.pod_index import PodIndex
from scheduler.framework.pod_requests import PodRequestColumns
from scheduler.framework.types import NodeInfo

IntColumn = npt.NDArray[np.int64]
BoolColumn = npt.NDArray[np.bool_]


class NodeTable:
    """Columns over the snapshot's nodes; row i is `infos[i]`."""

    alloc_cpu: IntColumn
    alloc_mem: IntColumn
    alloc_eph: IntColumn
    alloc_pods: IntColumn
    req_cpu: IntColumn
    req_mem: IntColumn
    req_eph: IntColumn
    pod_count: IntColumn
    nz_cpu: IntColumn
    nz_mem: IntColumn
    unschedulable: BoolColumn
    hard_taints: BoolColumn
    soft_taints: BoolColumn
    has_ports: BoolColumn
    anti_affinity_pods: IntColumn
    present: BoolColumn  # the NodeInfo has its Node (a node's pods may arrive before it)

    def __init__(self, infos: list[NodeInfo], previous: NodeTable | None = None) -> None:
        """Builds the columns over `infos`; rows whose NodeInfo `previous` already holds are
        gathered from it with numpy, so a node added or removed (which reorders every row)
        costs Python work only for the changed nodes."""
        n = len(infos)
        self.n = n
        self.infos = infos
        self.names = [info.name for info in infos]
        self.index = {name: i for i, name in enumerate(self.names)}
        self._labels: _LabelIndex | None = None
        self._images: ImageIndex | None = None
        self._domains: dict[str, tuple[IntColumn, tuple[str, ...]]] = {}
        self._domain_slots: dict[str, dict[str, int]] = {}
        self._pods: PodIndex | None = None
        if previous is None or previous.n == 0:
            source = None
            fresh: Iterable[int] = range(n)
        else:
            source, fresh = _reusable_rows(previous, infos)
        for column, dtype in _COLUMNS:
            values = np.zeros(n, dtype) if source is None else getattr(previous, column)[source]
            setattr(self, column, values)
        self._scalar: dict[str, tuple[IntColumn, IntColumn]] = {}
        if source is not None and previous is not None:
            for name, (alloc, req) in previous._scalar.items():
                self._scalar[name] = (alloc[source], req[source])
        for i in fresh:
            self._write_row(i, infos[i])
        #: Pods with required anti-affinity on all nodes: zero lets the check skip the column.
        self.anti_affinity_total = int(self.anti_affinity_pods.sum())
        if previous is not None and previous._images is not None:
            self._take_image_index(previous, previous._images, fresh)
        if source is not None and previous is not None and previous._pods is not None:
            self._pods = previous._pods.rebuilt(infos, source, list(fresh))

    def _take_image_index(
        self, previous: NodeTable, images: ImageIndex, fresh: Iterable[int]
    ) -> None:
        """Moves `previous`'s image index here and applies the nodes added, removed or changed
        since: building it anew costs a Python step per image name of every node."""
        previous._images = None
        images.rebind(self.index)
        for name, row in previous.index.items():
            if name not in self.index:
                images.set_node(name, previous.infos[row].node, None)
        for i in fresh:
            name = self.names[i]
            old = previous.index.get(name)
            old_node = previous.infos[old].node if old is not None else None
            images.set_node(name, old_node, self.infos[i].node)
        self._images = images

    def update_row(self, i: int, info: NodeInfo) -> None:
        """Rewrites row i after its NodeInfo changed."""
        old = self.infos[i]
        self.infos[i] = info
        if old.node is not info.node and (
            old.node is None or info.node is None or old.node.labels != info.node.labels
        ):
            self._labels = None
            self._domains = {}
            self._domain_slots = {}
        if self._pods is not None:
            self._pods.node_changed(i, old, info)
        if self._images is not None:
            self._images.set_node(info.name, old.node, info.node)
        self.anti_affinity_total += info.required_anti_affinity_pods - int(
            self.anti_affinity_pods[i]
        )
        self._write_row(i, info)

    def _write_row(self, i: int, info: NodeInfo) -> None:
        alloc, req = info.allocatable, info.requested
        self.alloc_cpu[i] = alloc.milli_cpu
        self.alloc_mem[i] = alloc.memory
        self.alloc_eph[i] = alloc.ephemeral_storage
        self.alloc_pods[i] = alloc.allowed_pod_number
        self.req_cpu[i] = req.milli_cpu
        self.req_mem[i] = req.memory
        self.req_eph[i] = req.ephemeral_storage
        self.pod_count[i] = len(info.pods)
        self.nz_cpu[i] = info.non_zero_requested.milli_cpu
        self.nz_mem[i] = info.non_zero_requested.memory
        self.has_ports[i] = len(info.used_ports) > 0
        self.anti_affinity_pods[i] = info.required_anti_affinity_pods
        self.present[i] = info.node is not None
        for name, (alloc_col, req_col) in self._scalar.items():
            alloc_col[i] = alloc.scalar.get(name, 0)
            req_col[i] = req.scalar.get(name, 0)
        node = info.node
        if node is None:
            self.unschedulable[i] = True
            self.hard_taints[i] = False
            self.soft_taints[i] = False
            return
        self.unschedulable[i] = node.unschedulable
        hard = soft = False
        for taint in node.taints:
            if taint.effect in (NO_SCHEDULE, NO_EXECUTE):
                hard = True
            elif taint.effect == PREFER_NO_SCHEDULE:
                soft = True
        self.hard_taints[i] = hard
        self.soft_taints[i] = soft

    def scalar(self, name: str) -> tuple[IntColumn, IntColumn]:
        """(allocatable, requested) columns of an extended resource, built on first use."""
        cols = self._scalar.get(name)
        if cols is None:
            alloc = np.fromiter(
                (info.allocatable.scalar.get(name, 0) for info in self.infos), np.int64, self.n
            )
            req = np.fromiter(
                (info.requested.scalar.get(name, 0) for info in self.infos), np.int64, self.n
            )
            cols = (alloc, req)
            self._scalar[name] = cols
        return cols

    def with_pods_counted(self, added: PodRequestColumns) -> NodeTable:
        """This table with the `added` pods counted on their rows as a PodCountingFilter reads
        a node: pod count and requests (extended resources included). Every other column is
        this table's own, so the result is only for those plugins (the nominated-pods pass of
        a diagnosis)."""
        rows = added.rows
        view = copy.copy(self)
        view.pod_count = _plus(self.pod_count, rows, 1)
        view.req_cpu = _plus(self.req_cpu, rows, added.cpu)
        view.req_mem = _plus(self.req_mem, rows, added.memory)
        view.req_eph = _plus(self.req_eph, rows, added.storage)
        view._scalar = dict(self._scalar)
        for name, amounts in added.scalar.items():
            alloc, used = self.scalar(name)
            view._scalar[name] = (alloc, _plus(used, rows, amounts))
        return view

    def requirement_mask(self, req: Requirement) -> BoolColumn:
        """Rows whose node labels satisfy one label requirement."""
        if self._labels is None:
            self._labels = _LabelIndex(self)
        return self._labels.mask(req)

    def image_index(self) -> ImageIndex:
        """Which rows hold each image name: built on first use, then kept up to date node by
        node (an image pulled or removed, a node added or removed)."""
        if self._images is None:
            self._images = ImageIndex(self.infos, self.index)
        return self._images

    def topology_domains(self, key: str) -> tuple[IntColumn, tuple[str, ...]]:
        """The topology domains of node label `key`: per row, the index in the returned values
        of the node's value for the label; -1 where the node lacks it (or is gone). Every
        returned value is some row's. Shared: do not modify."""
        found = self._domains.get(key)
        if found is None:
            values: dict[str, int] = {}
            ids: IntColumn = np.full(self.n, -1, np.int64)
            for i, info in enumerate(self.infos):
                if info.node is not None:
                    value = info.node.labels.get(key)
                    if value is not None:
                        ids[i] = values.setdefault(value, len(values))
            ids.flags.writeable = False
            found = self._domains[key] = (ids, tuple(values))
        return found

    def domain_slots(self, key: str) -> Mapping[str, int]:
        """The inverse of `topology_domains(key)`'s values: value -> its index. Shared: do not
        modify (copy first)."""
        found = self._domain_slots.get(key)
        if found is None:
            _, values = self.topology_domains(key)
            found = self._domain_slots[key] = {value: i for i, value in enumerate(values)}
        return found

    def pod_counts(self, key: Hashable, matches: Callable[[Pod], bool]) -> IntColumn:
        """Per row, how many of the node's pods (assumed ones included) satisfy `matches`.

        `matches` may read only a pod's namespace, labels and whether it is terminating
        (deletion_timestamp set), and `key` must name it: the same key always means the same
        predicate, so the counts are kept per key and corrected node by node as pods come and
        go. The result is shared and read-only.
        """
        return self._pod_index().pod_counts(key, matches)

    def affinity_term_counts(
        self, kind: str
    ) -> Mapping[Hashable, tuple[npt.NDArray[np.intp], IntColumn]]:
        """Existing pods' pod (anti-)affinity terms of one kind (an attribute of PodAffinity:
        "required", "preferred", "anti_required", "anti_preferred"): each distinct term
        (a WeightedPodAffinityTerm for the preferred kinds) -> (rows, how many times the pods
        of that row carry it). The arrays are shared: do not modify them."""
        return self._pod_index().affinity_term_counts(kind)

    def _pod_index(self) -> PodIndex:
        if self._pods is None:
            self._pods = PodIndex(self.infos)
        return self._pods

    def rows(self, names: Iterable[str]) -> list[int]:
        return [self.index[name] for name in names if name in self.index]


# Every per-row column and its dtype; `_write_row` fills one row of each.
_COLUMNS: tuple[tuple[str, type[np.generic]], ...] = (
    ("alloc_cpu", np.int64),
    ("alloc_mem", np.int64),
    ("alloc_eph", np.int64),
    ("alloc_pods", np.int64),
    ("req_cpu", np.int64),
    ("req_mem", np.int64),
    ("req_eph", np.int64),
    ("pod_count", np.int64),
    ("nz_cpu", np.int64),
    ("nz_mem", np.int64),
    ("unschedulable", np.bool_),
    ("hard_taints", np.bool_),
    ("soft_taints", np.bool_),
    ("has_ports", np.bool_),
    ("anti_affinity_pods", np.int64),
    ("present", np.bool_),
)


def _reusable_rows(previous: NodeTable, infos: list[NodeInfo]) -> tuple[IntColumn, list[int]]:
    """For each new row, the row of `previous` holding the same NodeInfo object (0 when none),
    and the new rows that must be written from their NodeInfo."""
    old_index, old_infos = previous.index, previous.infos
    source: IntColumn = np.zeros(len(infos), np.int64)
    fresh: list[int] = []
    for i, info in enumerate(infos):
        j = old_index.get(info.name)
        if j is not None and old_infos[j] is info:
            source[i] = j
        else:
            fresh.append(i)
    return source, fresh


def _plus(column: IntColumn, rows: IntColumn, amounts: IntColumn | int) -> IntColumn:
    """A copy of `column` with each amount added at its row (a row may repeat)."""
    if isinstance(amounts, int):
        return column + np.bincount(rows, minlength=len(column)).astype(np.int64) * amounts
    result = column.copy()
    np.add.at(result, rows, amounts)
    return result


class _LabelIndex:
    """label key -> value -> rows, so node selectors evaluate as a few boolean ORs/ANDs."""

    def __init__(self, table: NodeTable) -> None:
        self.n = table.n
        self._rows: dict[str, dict[str, list[int]]] = {}
        for i, info in enumerate(table.infos):
            if info.node is None:
                continue
            for key, val in info.node.labels.items():
                self._rows.setdefault(key, {}).setdefault(val, []).append(i)
        self._cache: dict[Requirement, BoolColumn] = {}

    def _mask_of(self, key: str, values: Iterable[str] | None) -> BoolColumn:
        mask = np.zeros(self.n, np.bool_)
        by_value = self._rows.get(key)
        if not by_value:
            return mask
        selected = by_value.values() if values is None else (by_value.get(v, []) for v in values)
        for rows in selected:
            mask[rows] = True
        return mask

    def mask(self, req: Requirement) -> BoolColumn:
        cached = self._cache.get(req)
        if cached is not None:
            return cached
        op = req.operator
        if op == IN:
            result = self._mask_of(req.key, req.values)
        elif op == NOT_IN:
            result = ~self._mask_of(req.key, req.values)
        elif op == EXISTS:
            result = self._mask_of(req.key, None)
        elif op == DOES_NOT_EXIST:
            result = ~self._mask_of(req.key, None)
        elif op in (GT, LT):
            result = np.zeros(self.n, np.bool_)
            for val, rows in self._rows.get(req.key, {}).items():
                number = parse_go_int(val)
                if number is None:
                    continue
                if (number > req.number) if op == GT else (number < req.number):
                    result[rows] = True
        else:
            result = np.zeros(self.n, np.bool_)
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[req] = result
        return result


class ImageIndex:
    """image name (as in `node.status.images[].names`) -> the nodes reporting it and the size
    each reports, for ImageLocality: its spread factor needs how many nodes hold an image, and
    scoring the feasible rows then takes one numpy step per pod image.

    Kept by node name, so a table rebuilt after a node was added or removed takes it over
    (`rebind`) and applies only the changed nodes; the row arrays are derived per table, per
    image name, on first use.
    """

    def __init__(self, infos: list[NodeInfo], row_of: dict[str, int]) -> None:
        self._holders: dict[str, dict[str, int]] = {}
        self._row_of = row_of
        self._arrays: dict[str, tuple[npt.NDArray[np.intp], IntColumn]] = {}
        for info in infos:
            if info.node is not None and info.node.images:
                self._add(info.name, _image_sizes(info.node))

    def rebind(self, row_of: dict[str, int]) -> None:
        """Serves a new table (its rows by node name); the row arrays are rebuilt on demand."""
        self._row_of = row_of
        self._arrays = {}

    def set_node(self, node_name: str, old: Node | None, new: Node | None) -> None:
        """Applies a node's change of images (None: no node)."""
        if old is new:
            return
        old_images = old.images if old is not None else ()
        new_images = new.images if new is not None else ()
        if old_images == new_images:
            return
        old_sizes = _image_sizes(old) if old is not None else {}
        new_sizes = _image_sizes(new) if new is not None else {}
        for name in old_sizes.keys() - new_sizes.keys():
            holders = self._holders[name]
            del holders[node_name]
            if not holders:
                del self._holders[name]
            self._arrays.pop(name, None)
        self._add(node_name, {k: v for k, v in new_sizes.items() if old_sizes.get(k) != v})

    def _add(self, node_name: str, sizes: dict[str, int]) -> None:
        for name, size in sizes.items():
            holders = self._holders.get(name)
            if holders is None:
                self._holders[name] = {node_name: size}
            else:
                holders[node_name] = size
            self._arrays.pop(name, None)

    def count(self, name: str) -> int:
        """How many nodes report the image name."""
        holders = self._holders.get(name)
        return len(holders) if holders is not None else 0

    def entry(self, name: str) -> tuple[npt.NDArray[np.intp], IntColumn] | None:
        """(rows, sizes) of the nodes reporting the image name; None when none does."""
        arrays = self._arrays.get(name)
        if arrays is None:
            holders = self._holders.get(name)
            if holders is None:
                return None
            row_of = self._row_of
            count = len(holders)
            arrays = (
                np.fromiter((row_of[node] for node in holders), np.intp, count),
                np.fromiter(holders.values(), np.int64, count),
            )
            self._arrays[name] = arrays
        return arrays


def _image_sizes(node: Node) -> dict[str, int]:
    """name -> size on this node; a name listed twice on one node counts once, first size."""
    sizes: dict[str, int] = {}
    for image in node.images:
        for name in image.names:
            sizes.setdefault(name, image.size_bytes)
    return sizes
