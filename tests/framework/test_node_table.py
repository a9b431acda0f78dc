"""A table rebuilt from the previous one (node added or removed) equals one built from scratch."""

import numpy as np

from scheduler.api.labels import IN, Requirement
from scheduler.backend.cache import Cache, Snapshot
from scheduler.framework.node_table import _COLUMNS, NodeTable
from scheduler.testing import make_node, make_pod

GPU = "example.com/gpu"


def _assert_same_as_fresh(table: NodeTable) -> None:
    fresh = NodeTable(list(table.infos))
    assert table.names == fresh.names
    assert table.index == fresh.index
    for column, _ in _COLUMNS:
        np.testing.assert_array_equal(getattr(table, column), getattr(fresh, column), column)
    for name, (alloc, req) in table._scalar.items():
        fresh_alloc, fresh_req = fresh.scalar(name)
        np.testing.assert_array_equal(alloc, fresh_alloc)
        np.testing.assert_array_equal(req, fresh_req)


def test_structural_change_keeps_every_row_equal_to_a_fresh_build() -> None:
    cache = Cache()
    pods = [make_pod(f"p{i}", cpu=f"{100 * i}m", node_name=f"n{i}") for i in range(6)]
    for i, pod in enumerate(pods):
        cache.add_node(make_node(f"n{i}", cpu=str(4 + i), extended={GPU: str(i)}))
        cache.add_pod(pod)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    snapshot.table.scalar(GPU)  # built before the change, so it must be carried over
    before = snapshot.table

    cache.remove_node(make_node("n2"))
    cache.remove_pod(pods[2])
    cache.add_node(make_node("new", cpu="16", extended={GPU: "8"}, unschedulable=True))
    cache.add_pod(make_pod("q", cpu="1", requests={GPU: "1"}, node_name="n4"))
    cache.update_snapshot(snapshot)

    table = snapshot.table
    assert table is not before
    assert "n2" not in table.index
    _assert_same_as_fresh(table)
    row = table.index["new"]
    assert table.alloc_cpu[row] == 16000 and table.unschedulable[row]
    gpu_alloc, gpu_req = table.scalar(GPU)
    assert gpu_alloc[row] == 8
    assert gpu_req[table.index["n4"]] == 1
    assert table.req_cpu[table.index["n4"]] == 1400


def test_rebuild_drops_the_label_index_of_the_previous_rows() -> None:
    cache = Cache()
    cache.add_node(make_node("a", labels={"zone": "x"}))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    in_x = Requirement("zone", IN, frozenset(["x"]))
    assert snapshot.table.requirement_mask(in_x).tolist() == [True]

    cache.add_node(make_node("b", labels={"zone": "y"}))
    cache.add_node(make_node("c", labels={"zone": "x"}))
    cache.update_snapshot(snapshot)

    mask = snapshot.table.requirement_mask(in_x)
    assert dict(zip(snapshot.table.names, mask.tolist(), strict=True)) == {
        "a": True,
        "b": False,
        "c": True,
    }
