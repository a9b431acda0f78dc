"""Filter (DoNotSchedule): cases ported from upstream's filtering_test.go TestSingleConstraint
and TestMultipleConstraints, plus the messages and codes the scheduler reports."""

from __future__ import annotations

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code
from scheduler.plugins.pod_topology_spread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from scheduler.testing import make_snapshot
from tests.plugins.pod_topology_spread.kit import (
    BAR,
    FOO,
    filter_codes,
    incoming,
    node,
    plugin_for,
    pods_on,
)

OK, NO, UNRESOLVABLE = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
DNS = "DoNotSchedule"

ZONED = [
    node("node-a", zone="zone1", node="node-a"),
    node("node-b", zone="zone1", node="node-b"),
    node("node-x", zone="zone2", node="node-x"),
    node("node-y", zone="zone2", node="node-y"),
]


def test_no_existing_pods_every_node_fits() -> None:
    pod = incoming("foo").spread(1, "zone", DNS, FOO).obj()
    assert set(filter_codes(pod, ZONED, []).values()) == {OK}


def test_pods_spread_3_3_all_nodes_fit() -> None:
    pods = [
        *pods_on("node-a", 1, "foo"),
        *pods_on("node-b", 2, "foo"),
        *pods_on("node-x", 1, "foo"),
        *pods_on("node-y", 2, "foo"),
    ]
    pod = incoming("foo").spread(1, "zone", DNS, FOO).obj()
    assert set(filter_codes(pod, ZONED, pods).values()) == {OK}


def test_spread_2_1_0_3_over_nodes_only_the_empty_node_fits() -> None:
    pods = [
        *pods_on("node-a", 2, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-y", 3, "foo"),
    ]
    pod = incoming("foo").spread(1, "node", DNS, FOO).obj()
    assert filter_codes(pod, ZONED, pods) == {
        "node-a": NO,
        "node-b": NO,
        "node-x": OK,
        "node-y": NO,
    }
    # maxSkew 2: node-b (1+1-0) and node-x fit.
    pod = incoming("foo").spread(2, "node", DNS, FOO).obj()
    assert filter_codes(pod, ZONED, pods) == {
        "node-a": NO,
        "node-b": OK,
        "node-x": OK,
        "node-y": NO,
    }
    # the incoming pod does not match its own selector: selfMatch 0, so node-b fits at skew 1.
    pod = incoming("bar").spread(1, "node", DNS, FOO).obj()
    assert filter_codes(pod, ZONED, pods) == {
        "node-a": NO,
        "node-b": OK,
        "node-x": OK,
        "node-y": NO,
    }


def test_pods_of_other_namespaces_and_terminating_pods_do_not_count() -> None:
    nodes = ZONED[:2]
    elsewhere = pods_on("node-a", 3, "foo", namespace="other")
    terminating = pods_on("node-a", 1, "foo")
    terminating[0].deletion_timestamp = 1.0
    pod = incoming("foo").spread(1, "node", DNS, FOO).obj()
    assert filter_codes(pod, nodes, [*elsewhere, *terminating]) == {"node-a": OK, "node-b": OK}


def test_nil_selector_matches_no_pod() -> None:
    pods = pods_on("node-a", 3, "foo")
    pod = incoming("foo").spread(1, "node", DNS, None).obj()
    assert set(filter_codes(pod, ZONED, pods).values()) == {OK}


def test_node_missing_the_key_is_unresolvable_with_its_own_message() -> None:
    nodes = [node("node-a", zone="zone1"), node("node-b")]
    pod = incoming("foo").spread(1, "zone", DNS, FOO).obj()
    snap = make_snapshot(nodes, pods_on("node-a", 2, "foo"))
    plugin = plugin_for(snap)
    state = CycleState()
    plugin.pre_filter(state, pod, snap.list())
    missing = plugin.filter(state, pod, snap.get("node-b"))
    assert missing.code == UNRESOLVABLE
    assert missing.message() == ERR_REASON_NODE_LABEL_NOT_MATCH
    assert missing.message() == (
        "node(s) didn't match pod topology spread constraints (missing required label)"
    )
    assert plugin.filter(state, pod, snap.get("node-a")) is None  # only one domain: skew 0
    # the statuses of the diagnosis equal the per-node ones
    rows = snap.table.rows(["node-b"])
    batch = plugin.filter_batch_statuses(state, pod, snap.table, np.array(rows, np.intp)).to_list()
    assert batch[0].message() == ERR_REASON_NODE_LABEL_NOT_MATCH


def test_skew_rejection_is_unschedulable_so_preemption_may_help() -> None:
    pods = pods_on("node-a", 2, "foo")
    nodes = [node("node-a", node="node-a"), node("node-b", node="node-b")]
    pod = incoming("foo").spread(1, "node", DNS, FOO).obj()
    snap = make_snapshot(nodes, pods)
    plugin = plugin_for(snap)
    state = CycleState()
    plugin.pre_filter(state, pod, snap.list())
    status = plugin.filter(state, pod, snap.get("node-a"))
    assert status.code == NO
    assert status.message() == ERR_REASON_CONSTRAINTS_NOT_MATCH


def test_min_domains_counts_missing_domains_as_zero() -> None:
    nodes = [node(n, node=n) for n in ("node-a", "node-b", "node-c")]
    pods = [
        *pods_on("node-a", 2, "foo"),
        *pods_on("node-b", 2, "foo"),
        *pods_on("node-c", 1, "foo"),
    ]
    # 3 domains < minDomains 4: the global minimum is 0, so 2+1-0 > 2 rejects a and b.
    pod = incoming("foo").spread(2, "node", DNS, FOO, minDomains=4).obj()
    assert filter_codes(pod, nodes, pods) == {"node-a": NO, "node-b": NO, "node-c": OK}
    # 3 domains >= minDomains 2: the minimum is 1, every node fits.
    pod = incoming("foo").spread(2, "node", DNS, FOO, minDomains=2).obj()
    assert set(filter_codes(pod, nodes, pods).values()) == {OK}


def test_min_domains_over_zones() -> None:
    pods = [
        *pods_on("node-a", 1, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-y", 1, "foo"),
    ]
    pod = incoming("foo").spread(2, "zone", DNS, FOO, minDomains=3).obj()
    assert filter_codes(pod, ZONED, pods) == {
        "node-a": NO,
        "node-b": NO,
        "node-x": OK,
        "node-y": OK,
    }
    pod = incoming("foo").spread(2, "zone", DNS, FOO, minDomains=1).obj()
    assert set(filter_codes(pod, ZONED, pods).values()) == {OK}


def _affinity_nodes() -> list:
    return [
        node("node-a", node="node-a", foo=""),
        node("node-b", node="node-b", foo=""),
        node("node-x", node="node-x", foo=""),
        node("node-y", node="node-y"),
    ]


def test_node_affinity_policy_honor_leaves_unmatched_nodes_out_of_the_count() -> None:
    # pods spread 1/1/0/~1~: node-y (no label foo) does not count, so the minimum is 0.
    pods = [
        *pods_on("node-a", 1, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-y", 1, "foo"),
    ]
    pod = incoming("foo").node_selector({"foo": ""}).spread(1, "node", DNS, FOO).obj()
    codes = filter_codes(pod, _affinity_nodes(), pods)
    assert codes == {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": OK}


def test_node_affinity_policy_ignore_counts_every_node() -> None:
    # 1/1/0/1 with node-y counted: node-y 1+1-0 = 2 > 1 rejects it.
    pods = [
        *pods_on("node-a", 1, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-y", 1, "foo"),
    ]
    pod = (
        incoming("foo")
        .node_selector({"foo": ""})
        .spread(1, "node", DNS, FOO, nodeAffinityPolicy="Ignore")
        .obj()
    )
    codes = filter_codes(pod, _affinity_nodes(), pods)
    assert codes == {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO}


def test_node_affinity_policy_honor_with_required_node_affinity() -> None:
    pods = [
        *pods_on("node-a", 1, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-x", 1, "foo"),
    ]
    pod = incoming("foo").node_affinity_in("foo", [""]).spread(1, "node", DNS, FOO).obj()
    # node-y is outside the affinity: the counted domains are a, b, x (1/1/1); y's own domain
    # is unknown (0) so it passes here, and NodeAffinity rejects it in the real profile.
    codes = filter_codes(pod, _affinity_nodes(), pods)
    assert codes == {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}


def test_node_taints_policy_honor_and_ignore() -> None:
    nodes = [*_affinity_nodes()[:3], node("node-y", "dedicated", node="node-y")]
    pods = [
        *pods_on("node-a", 1, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-y", 1, "foo"),
    ]
    honor = incoming("foo").spread(1, "node", DNS, FOO, nodeTaintsPolicy="Honor").obj()
    # the tainted node-y is not counted: minimum 0 from node-x; node-y itself counts 0.
    assert filter_codes(honor, nodes, pods) == {
        "node-a": NO,
        "node-b": NO,
        "node-x": OK,
        "node-y": OK,
    }
    ignore = incoming("foo").spread(1, "node", DNS, FOO).obj()
    assert filter_codes(ignore, nodes, pods) == {
        "node-a": NO,
        "node-b": NO,
        "node-x": OK,
        "node-y": NO,
    }
    tolerating = (
        incoming("foo")
        .toleration("dedicated", effect="NoSchedule", operator="Exists")
        .spread(1, "node", DNS, FOO, nodeTaintsPolicy="Honor")
        .obj()
    )
    assert filter_codes(tolerating, nodes, pods)["node-y"] == NO


def test_two_constraints_zone_and_node() -> None:
    # spreads = [3/3, 2/1/0/3]: only node-x fits both.
    nodes = ZONED
    pods = [
        *pods_on("node-a", 2, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-y", 3, "foo"),
    ]
    pod = incoming("foo").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, FOO).obj()
    assert filter_codes(pod, nodes, pods) == {
        "node-a": NO,
        "node-b": NO,
        "node-x": OK,
        "node-y": NO,
    }
    # spreads = [3/4, 2/1/1/3]: zone2 is too full for node-x (4+1-3), node-a's host is two
    # above the minimum (2+1-1): node-b is the only fit.
    pods = [
        *pods_on("node-a", 2, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-x", 1, "foo"),
        *pods_on("node-y", 3, "foo"),
    ]
    assert filter_codes(pod, nodes, pods) == {
        "node-a": NO,
        "node-b": OK,
        "node-x": NO,
        "node-y": NO,
    }


def test_constraints_with_different_selectors() -> None:
    # zone by foo: 1/0, node by bar: 1/0/0/1; pod has foo and bar.
    pods = [*pods_on("node-a", 1, "foo"), *pods_on("node-y", 1, "bar")]
    pod = incoming("foo", "bar").spread(1, "zone", DNS, FOO).spread(1, "node", DNS, BAR).obj()
    assert filter_codes(pod, ZONED, pods) == {
        "node-a": NO,
        "node-b": NO,
        "node-x": OK,
        "node-y": NO,
    }


def test_match_label_keys_are_anded_with_the_selector() -> None:
    nodes = [node(n, node=n) for n in ("node-a", "node-b")]
    v1 = pods_on("node-a", 2, "foo")
    for p in v1:
        p.labels = {"foo": "", "rev": "1"}
    pod = (
        incoming("foo").label("rev", "2").spread(1, "node", DNS, FOO, matchLabelKeys=["rev"]).obj()
    )
    # the rev=1 pods do not count for a rev=2 pod.
    assert filter_codes(pod, nodes, v1) == {"node-a": OK, "node-b": OK}
    plain = incoming("foo").label("rev", "2").spread(1, "node", DNS, FOO).obj()
    assert filter_codes(plain, nodes, v1) == {"node-a": NO, "node-b": OK}


def test_empty_selector_counts_no_existing_pod_but_selects_the_incoming_one() -> None:
    """countPodsMatchSelector returns 0 for an empty selector, while Matches is true."""
    nodes = [node(n, node=n) for n in ("node-a", "node-b")]
    pods = pods_on("node-a", 3, "foo")
    pod = incoming("foo").spread(1, "node", DNS, {}).obj()
    assert filter_codes(pod, nodes, pods) == {"node-a": OK, "node-b": OK}


def test_pre_filter_skips_without_hard_constraints() -> None:
    snap = make_snapshot(ZONED, [])
    plugin = plugin_for(snap)
    soft = incoming("foo").spread(1, "zone", "ScheduleAnyway", FOO).obj()
    _, status = plugin.pre_filter(CycleState(), soft, snap.list())
    assert status is not None and status.is_skip()
    # a pod without constraints and without Services/controllers: System defaults give none.
    _, status = plugin.pre_filter(CycleState(), incoming("foo").obj(), snap.list())
    assert status is not None and status.is_skip()
