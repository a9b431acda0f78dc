"""PreFilterExtensions (add_pod/remove_pod) and the critical paths they maintain, down to a
real DefaultPreemption dry run that must evict both matching pods."""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.plugins.default_preemption.plugin import DefaultPreemption
from scheduler.plugins.pod_topology_spread.filtering import CriticalPaths
from scheduler.plugins.pod_topology_spread.plugin import PRE_FILTER_KEY
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import PodWrapper, make_node, make_pod, make_snapshot
from scheduler.testing.harness import PROFILE, Harness
from tests.plugins.pod_topology_spread.kit import FOO, incoming, node, plugin_for, pods_on

DNS = "DoNotSchedule"


def test_critical_paths_keep_the_two_smallest_as_upstream() -> None:
    paths = CriticalPaths()
    for value, num in (("a", 3), ("b", 1), ("c", 2)):
        paths.update(value, num)
    assert paths.paths == [["b", 1], ["c", 2]]
    paths.update("b", 4)  # b grows past c: swapped
    assert paths.paths == [["c", 2], ["b", 4]]
    # upstream's approximation: "a" (3) is not tracked, so the second path stays b=4.
    assert paths.min_match == 2


def test_add_and_remove_pod_change_the_domain_counts_of_a_clone_only() -> None:
    nodes = [node("node-a", zone="z1"), node("node-b", zone="z2")]
    pods = pods_on("node-a", 1, "foo")
    snap = make_snapshot(nodes, pods)
    plugin = plugin_for(snap)
    pod = incoming("foo").spread(1, "zone", DNS, FOO).obj()
    state = CycleState()
    plugin.pre_filter(state, pod, snap.list())
    assert plugin.filter(state, pod, snap.get("node-a")) is not None  # 1+1-0 > 1
    assert plugin.filter(state, pod, snap.get("node-b")) is None
    clone = state.clone()
    extra = PodWrapper("new").label("foo", "").node("node-b").obj()
    assert plugin.add_pod(clone, pod, extra, snap.get("node-b")) is None
    assert clone.read(PRE_FILTER_KEY).constraints[0].match_num == {"z1": 1, "z2": 1}
    assert state.read(PRE_FILTER_KEY).constraints[0].match_num == {"z1": 1, "z2": 0}
    assert plugin.remove_pod(clone, pod, pods[0], snap.get("node-a")) is None
    assert clone.read(PRE_FILTER_KEY).constraints[0].match_num == {"z1": 0, "z2": 1}
    # node-b is now the fuller domain: 1+1-0 > 1; the original state is unchanged.
    assert plugin.filter(clone, pod, snap.get("node-b")) is not None
    assert plugin.filter(clone, pod, snap.get("node-a")) is None
    assert plugin.filter(state, pod, snap.get("node-b")) is None


def test_updates_ignore_other_namespaces_unselected_pods_and_excluded_nodes() -> None:
    nodes = [node("node-a", zone="z1", foo=""), node("node-b", zone="z2")]
    snap = make_snapshot(nodes, [])
    plugin = plugin_for(snap)
    pod = incoming("foo").node_selector({"foo": ""}).spread(1, "zone", DNS, FOO).obj()
    state = CycleState()
    plugin.pre_filter(state, pod, snap.list())
    other_ns = PodWrapper("x", "ns2").label("foo", "").obj()
    unselected = PodWrapper("y").label("bar", "").obj()
    selected = PodWrapper("z").label("foo", "").obj()
    plugin.add_pod(state, pod, other_ns, snap.get("node-a"))
    plugin.add_pod(state, pod, unselected, snap.get("node-a"))
    plugin.add_pod(state, pod, selected, snap.get("node-b"))  # outside the node affinity
    assert state.read(PRE_FILTER_KEY).constraints[0].match_num == {"z1": 0}
    plugin.add_pod(state, pod, selected, snap.get("node-a"))
    assert state.read(PRE_FILTER_KEY).constraints[0].match_num == {"z1": 1}


def _harness() -> Harness:
    enabled = tuple(
        PluginRef(name, 1 if name == "NodeResourcesFit" else None)
        for name in (
            "PrioritySort",
            "NodeResourcesFit",
            "PodTopologySpread",
            "DefaultPreemption",
            "DefaultBinder",
        )
    )
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    return Harness(spec, plugins=in_tree_registry())


def _victims(h: Harness, preemptor: object, node_name: str) -> list[str]:
    h.cache.update_snapshot(h.snapshot)
    state = CycleState()
    _, status, _ = h.fwk.run_pre_filter_plugins(state, preemptor, h.snapshot.list())
    assert status is None
    preemption = h.fwk.plugins["DefaultPreemption"]
    assert isinstance(preemption, DefaultPreemption)
    info = h.snapshot.get(node_name)
    assert info is not None
    victims, _, status = preemption.select_victims_on_node(state, preemptor, info.snapshot(), [])
    assert status is None
    return sorted(v.name for v in victims)


def test_conformance_spec_pod_topology_spread_preemption() -> None:
    """SchedulerPreemption "PodTopologySpread Preemption validates proper pods are preempted":
    node-1 holds high (9 of 10 fake units), node-2 three low pods (3 each). The medium pod (3)
    spreads by maxSkew 1: removing all lows fits; low-1 is reprieved (1+1-1 = 1), low-2 and
    low-3 are not (2+1-1 = 2), so exactly two go."""
    res = "example.com/fakePTSRes"
    h = _harness()
    try:
        for name in ("node-1", "node-2"):
            h.add_node(make_node(name, cpu="4", extended={res: "10"}, labels={"pts": name}))
        h.add_assigned_pod(
            make_pod(
                "high",
                node_name="node-1",
                priority=100,
                requests={res: "9"},
                labels={"e2e": ""},
                start_time="2026-01-01T00:00:00Z",
            )
        )
        for i in (1, 2, 3):
            h.add_assigned_pod(
                make_pod(
                    f"low-{i}",
                    node_name="node-2",
                    priority=1,
                    requests={res: "3"},
                    labels={"e2e": ""},
                    start_time=f"2026-01-01T00:00:0{i}Z",
                )
            )
        selector = {"matchExpressions": [{"key": "e2e", "operator": "Exists"}]}
        medium = (
            PodWrapper("medium")
            .label("e2e", "")
            .priority(10)
            .req({res: "3"})
            .spread(1, "pts", DNS, selector)
            .obj()
        )
        assert len(_victims(h, medium, "node-2")) == 2
    finally:
        h.close()


def test_default_preemption_evicts_both_matching_pods() -> None:
    """node-a holds two low-priority matching pods, node-b is full with a high-priority one.
    Without remove_pod the dry run would still count 2 on node-a and find no victims; with
    it, both pods must go (reprieving either brings the skew back to 2)."""
    h = _harness()
    try:
        for name in ("node-a", "node-b"):
            h.add_node(make_node(name, cpu="4", labels={"k": name}))
        for i in (1, 2):
            h.add_assigned_pod(
                make_pod(f"low{i}", node_name="node-a", priority=1, cpu="1", labels={"foo": ""})
            )
        h.add_assigned_pod(make_pod("high", node_name="node-b", priority=100, cpu="4"))
        preemptor = incoming("foo").priority(10).req(cpu="1").spread(1, "k", DNS, FOO).obj()
        assert _victims(h, preemptor, "node-a") == ["low1", "low2"]
    finally:
        h.close()
