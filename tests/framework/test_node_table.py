"""A table rebuilt from the previous one (node added or removed) equals one built from scratch."""

import random
from typing import Any

import numpy as np

from scheduler.api.labels import IN, Requirement
from scheduler.api.objects import Node
from scheduler.api.parse import parse_node
from scheduler.backend.cache import Cache, Snapshot
from scheduler.framework.node_table import _COLUMNS, ImageIndex, NodeTable
from scheduler.framework.pod_requests import PodRequestColumns
from scheduler.testing import make_node, make_pod, node_json

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


def _image_node(name: str, images: list[tuple[list[str], int]]) -> Node:
    obj = node_json(name)
    obj["status"]["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return parse_node(obj)


def _image_view(index: ImageIndex, table: NodeTable, names: list[str]) -> dict[str, Any]:
    """name -> (count, {node: size}) as the index serves it to the table's rows."""
    view: dict[str, Any] = {}
    for name in names:
        entry = index.entry(name)
        if entry is None:
            view[name] = (index.count(name), {})
            continue
        rows, sizes = entry
        holders = {table.names[int(r)]: int(s) for r, s in zip(rows, sizes, strict=True)}
        assert len(holders) == len(rows)
        view[name] = (index.count(name), holders)
    return view


def test_image_index_kept_up_to_date_equals_a_fresh_build() -> None:
    """Nodes pulling and dropping images, added and removed, pods coming and going: the index
    carried from table to table serves what one built from scratch serves."""
    rng = random.Random(7)
    pool = [f"img{i}" for i in range(10)]

    def random_images() -> list[tuple[list[str], int]]:
        return [
            (
                [f"{name}:v1", f"{name}:latest"] if rng.random() < 0.5 else [f"{name}:v1"],
                rng.randrange(1, 5) * 1000,
            )
            for name in rng.sample(pool, rng.randrange(5))
        ]

    cache = Cache()
    nodes = {f"n{i}": _image_node(f"n{i}", random_images()) for i in range(12)}
    for node in nodes.values():
        cache.add_node(node)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    names = [f"{name}:{tag}" for name in pool for tag in ("v1", "latest")]
    snapshot.table.image_index()  # built now, then maintained
    serial = 0
    for _ in range(60):
        op = rng.random()
        if op < 0.4:
            name = rng.choice(sorted(nodes))
            new = _image_node(name, random_images())
            cache.update_node(nodes[name], new)
            nodes[name] = new
        elif op < 0.55 and len(nodes) > 2:
            name = rng.choice(sorted(nodes))
            cache.remove_node(nodes.pop(name))
        elif op < 0.7:
            serial += 1
            name = f"new{serial}"
            nodes[name] = _image_node(name, random_images())
            cache.add_node(nodes[name])
        else:
            serial += 1
            cache.add_pod(make_pod(f"p{serial}", node_name=rng.choice(sorted(nodes))))
        cache.update_snapshot(snapshot)
        table = snapshot.table
        assert table._images is not None, "the index was not carried over"
        fresh = ImageIndex(list(table.infos), table.index)
        assert _image_view(table.image_index(), table, names) == _image_view(fresh, table, names)


def test_anti_affinity_total_follows_rows_as_pods_come_and_go() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
            ]
        }
    }
    cache = Cache()
    for name in ("a", "b", "c"):
        cache.add_node(make_node(name))
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.table.anti_affinity_total == 0
    guarded = [make_pod(f"p{i}", node_name="b", affinity=anti) for i in range(2)]
    for pod in [*guarded, make_pod("plain", node_name="a")]:
        cache.add_pod(pod)
    cache.update_snapshot(snap)
    assert snap.table.anti_affinity_total == 2
    assert snap.table.anti_affinity_pods.tolist() == [0, 2, 0]
    cache.remove_pod(guarded[0])
    cache.add_node(make_node("d"))  # a structural change rebuilds the table
    cache.update_snapshot(snap)
    assert snap.table.anti_affinity_total == 1
    assert int(snap.table.anti_affinity_pods.sum()) == 1


def test_pods_counted_on_rows_equal_a_table_of_nodes_that_hold_them() -> None:
    """with_pods_counted (the nominated-pods pass of a diagnosis): requests, extended
    resources and pod counts as if the pods were on their rows; the table itself unchanged."""
    cache = Cache()
    for i in range(4):
        cache.add_node(make_node(f"n{i}", cpu="8", extended={GPU: "4"}))
        cache.add_pod(make_pod(f"p{i}", cpu="1", node_name=f"n{i}"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    before = {column: getattr(table, column).copy() for column, _ in _COLUMNS}
    added = {
        1: [make_pod("a", cpu="500m", memory="1Gi", requests={GPU: "2"}, node_name="n1")],
        3: [
            make_pod("b", cpu="2", node_name="n3"),
            make_pod("c", cpu="1", requests={GPU: "1"}, node_name="n3"),
        ],
    }
    view = table.with_pods_counted(PodRequestColumns.of(added))
    for column, values in before.items():
        np.testing.assert_array_equal(getattr(table, column), values, column)
    assert table.scalar(GPU)[1].tolist() == [0, 0, 0, 0]

    for pods in added.values():
        for pod in pods:
            cache.add_pod(pod)
    cache.update_snapshot(snapshot)
    held = snapshot.table  # the same table, its rows now updated in place
    for column in ("pod_count", "req_cpu", "req_mem", "req_eph"):
        np.testing.assert_array_equal(getattr(view, column), getattr(held, column), column)
    np.testing.assert_array_equal(view.scalar(GPU)[1], held.scalar(GPU)[1])
    np.testing.assert_array_equal(view.scalar(GPU)[0], held.scalar(GPU)[0])
    assert view.req_cpu.tolist() == [1000, 1500, 1000, 4000]
