import pytest

from scheduler.api.objects import replace_pod
from scheduler.backend.cache import Cache, CacheError, Snapshot
from scheduler.testing import make_node, make_pod


def _cache_with_nodes(*names: str) -> Cache:
    cache = Cache()
    for name in names:
        cache.add_node(make_node(name, cpu="4", memory="8Gi"))
    return cache


def test_assumed_pod_counts_on_its_node_until_forgotten() -> None:
    cache = _cache_with_nodes("n1")
    pod = replace_pod(make_pod("p", cpu="1"), node_name="n1")
    cache.assume_pod(pod)
    assert cache.node_infos()["n1"].requested.milli_cpu == 1000
    assert cache.is_assumed_pod(pod)
    cache.forget_pod(pod)
    assert cache.node_infos()["n1"].requested.milli_cpu == 0
    assert not cache.is_assumed_pod(pod)


def test_informer_add_confirms_assumed_pod_without_double_counting() -> None:
    cache = _cache_with_nodes("n1")
    pod = replace_pod(make_pod("p", cpu="1"), node_name="n1")
    cache.assume_pod(pod)
    cache.add_pod(pod)
    assert cache.node_infos()["n1"].requested.milli_cpu == 1000
    assert not cache.is_assumed_pod(pod)
    with pytest.raises(CacheError):
        cache.forget_pod(pod)


def test_assumed_pod_confirmed_on_another_node_moves() -> None:
    cache = _cache_with_nodes("n1", "n2")
    pod = make_pod("p", cpu="1")
    cache.assume_pod(replace_pod(pod, node_name="n1"))
    cache.add_pod(replace_pod(pod, node_name="n2"))
    infos = cache.node_infos()
    assert infos["n1"].requested.milli_cpu == 0
    assert infos["n2"].requested.milli_cpu == 1000


def test_pods_seen_before_their_node_are_kept_and_counted() -> None:
    cache = Cache()
    cache.add_pod(make_pod("p", cpu="1", node_name="late"))
    cache.add_node(make_node("late"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    info = snapshot.get("late")
    assert info is not None and info.requested.milli_cpu == 1000


def test_removed_node_with_pods_leaves_snapshot_but_keeps_pods() -> None:
    cache = _cache_with_nodes("n1", "n2")
    pod = make_pod("p", cpu="1", node_name="n1")
    cache.add_pod(pod)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    cache.remove_node(make_node("n1"))
    cache.update_snapshot(snapshot)
    assert [i.name for i in snapshot.list()] == ["n2"]
    cache.remove_pod(pod)
    assert "n1" not in cache.node_infos()


def test_update_pod_moves_requests() -> None:
    cache = _cache_with_nodes("n1")
    old = make_pod("p", cpu="1", node_name="n1")
    cache.add_pod(old)
    new = replace_pod(old, requests=make_pod(cpu="2").requests)
    cache.update_pod(old, new)
    assert cache.node_infos()["n1"].requested.milli_cpu == 2000


def test_errors_for_unknown_pods() -> None:
    cache = _cache_with_nodes("n1")
    with pytest.raises(CacheError):
        cache.remove_pod(make_pod("ghost", node_name="n1"))
    with pytest.raises(CacheError):
        cache.update_pod(make_pod("ghost", node_name="n1"), make_pod("ghost", node_name="n1"))
    pod = make_pod("dup", node_name="n1")
    cache.add_pod(pod)
    with pytest.raises(CacheError):
        cache.add_pod(pod)


def test_snapshot_updates_only_changed_nodes_and_table_rows() -> None:
    cache = _cache_with_nodes("n1", "n2", "n3")
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    before = {i.name: i for i in snapshot.list()}
    cache.add_pod(make_pod("p", cpu="1500m", memory="1Gi", node_name="n2"))
    cache.update_snapshot(snapshot)
    after = {i.name: i for i in snapshot.list()}
    assert after["n1"] is before["n1"] and after["n3"] is before["n3"]
    assert after["n2"] is not before["n2"]
    row = snapshot.table.index["n2"]
    assert snapshot.table.req_cpu[row] == 1500
    assert snapshot.table.req_mem[row] == 2**30
    assert snapshot.table.pod_count[row] == 1
    assert snapshot.table.infos[row] is after["n2"]


def test_snapshot_is_isolated_from_later_cache_changes() -> None:
    cache = _cache_with_nodes("n1")
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    cache.add_pod(make_pod("p", cpu="1", node_name="n1"))
    info = snapshot.get("n1")
    assert info is not None and info.requested.milli_cpu == 0


def test_snapshot_interleaves_zones() -> None:
    cache = Cache()
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("a3", "a"), ("b2", "b")]:
        cache.add_node(make_node(name, labels={"topology.kubernetes.io/zone": zone}))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert [i.name for i in snapshot.list()] == ["a1", "b1", "a2", "b2", "a3"]


def test_node_label_change_invalidates_label_index() -> None:
    from scheduler.api.labels import IN, Requirement

    cache = _cache_with_nodes("n1")
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    req = Requirement("disk", IN, frozenset(["ssd"]))
    assert not snapshot.table.requirement_mask(req)[0]
    old = make_node("n1", cpu="4", memory="8Gi")
    cache.update_node(old, make_node("n1", cpu="4", memory="8Gi", labels={"disk": "ssd"}))
    cache.update_snapshot(snapshot)
    assert snapshot.table.requirement_mask(req)[0]
