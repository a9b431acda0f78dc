"""Score (ScheduleAnyway): cases ported from upstream's scoring_test.go TestPodTopologySpreadScore.

Each raw score is sum(count * log(domains + 2) + maxSkew - 1) over the constraints, rounded
half away from zero; NormalizeScore maps s to 100 * (max + min - s) / max in integers.
"""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.plugins.pod_topology_spread.scoring import go_round
from scheduler.testing import make_snapshot
from tests.plugins.pod_topology_spread.kit import (
    BAR,
    FOO,
    incoming,
    node,
    plugin_for,
    pods_on,
    scores,
)

SA = "ScheduleAnyway"
FOUR_HOSTS = [node(n, hostname=n) for n in ("node-a", "node-b", "node-c", "node-d")]


def test_no_existing_pods_every_node_scores_100() -> None:
    pod = incoming("foo").spread(1, "kubernetes.io/hostname", SA, FOO).obj()
    assert scores(pod, FOUR_HOSTS[:2], []) == {"node-a": 100, "node-b": 100}


def test_only_one_candidate_scores_100() -> None:
    pods = [*pods_on("node-a", 2, "foo"), *pods_on("node-b", 1, "foo")]
    pod = incoming("foo").spread(1, "kubernetes.io/hostname", SA, FOO).obj()
    assert scores(pod, FOUR_HOSTS[:2], pods, failed=("node-b",)) == {"node-a": 100}


def test_hostname_spread_2_1_0_3() -> None:
    """weight log(4+2) = 1.79: raw 4/2/0/5 (3.58, 1.79, 0, 5.38 rounded); max 5, min 0."""
    pods = [
        *pods_on("node-a", 2, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-d", 3, "foo"),
    ]
    pod = incoming("foo").spread(1, "kubernetes.io/hostname", SA, FOO).obj()
    assert scores(pod, FOUR_HOSTS, pods) == {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0}
    # maxSkew 2 adds 1 to every raw score: 5/3/1/6, min 1 -> 100*(7-s)/6.
    pod = incoming("foo").spread(2, "kubernetes.io/hostname", SA, FOO).obj()
    assert scores(pod, FOUR_HOSTS, pods) == {
        "node-a": 33,
        "node-b": 66,
        "node-c": 100,
        "node-d": 16,
    }
    # a nil selector counts nothing: every node ties.
    pod = incoming("foo").spread(1, "kubernetes.io/hostname", SA, None).obj()
    assert set(scores(pod, FOUR_HOSTS, pods).values()) == {100}


def test_hostname_spread_4_3_2_1_max_skew_3() -> None:
    pods = [
        *pods_on("node-a", 4, "foo"),
        *pods_on("node-b", 3, "foo"),
        *pods_on("node-c", 2, "foo"),
        *pods_on("node-d", 1, "foo"),
    ]
    pod = incoming("foo").spread(3, "kubernetes.io/hostname", SA, FOO).obj()
    assert scores(pod, FOUR_HOSTS, pods) == {
        "node-a": 44,
        "node-b": 66,
        "node-c": 77,
        "node-d": 100,
    }


def test_three_of_four_candidates_one_lacking_the_key_scores_zero() -> None:
    nodes = [
        node("node-a", hostname="node-a"),
        node("node-b", n="node-b"),
        node("node-x", hostname="node-x"),
        node("node-y", hostname="node-y"),
    ]
    pods = [
        *pods_on("node-a", 4, "foo"),
        *pods_on("node-b", 2, "foo"),
        *pods_on("node-x", 1, "foo"),
        *pods_on("node-y", 3, "foo"),
    ]
    pod = incoming("foo").spread(1, "kubernetes.io/hostname", SA, FOO).obj()
    assert scores(pod, nodes, pods, failed=("node-y",)) == {
        "node-a": 16,
        "node-b": 0,
        "node-x": 100,
    }


def test_zone_constraint_counts_pods_of_failed_nodes_too() -> None:
    nodes = [
        node("node-a", zone="zone1", hostname="node-a"),
        node("node-b", zone="zone1", hostname="node-b"),
        node("node-x", zone="zone2", hostname="node-x"),
        node("node-y", zone="zone2", hostname="node-y"),
    ]
    pods = [
        *pods_on("node-a", 4, "foo"),
        *pods_on("node-b", 2, "foo"),
        *pods_on("node-x", 1, "foo"),
        *pods_on("node-y", 3, "foo"),
    ]
    pod = incoming("foo").spread(1, "zone", SA, FOO).obj()
    assert scores(pod, nodes, pods, failed=("node-y",)) == {
        "node-a": 75,
        "node-b": 75,
        "node-x": 100,
    }
    # two constraints, zone and hostname, 2 of 4 candidates: pods 2/~1~/2/~4~.
    pods = [
        *pods_on("node-a", 2, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-x", 2, "foo"),
        *pods_on("node-y", 4, "foo"),
    ]
    pod = (
        incoming("foo")
        .spread(1, "zone", SA, FOO)
        .spread(1, "kubernetes.io/hostname", SA, FOO)
        .obj()
    )
    assert scores(pod, nodes, pods, failed=("node-b", "node-y")) == {"node-a": 100, "node-x": 63}


def test_two_zone_constraints_with_different_selectors() -> None:
    nodes = [
        node("node-a", zone="zone1"),
        node("node-b", zone="zone1"),
        node("node-x", zone="zone2"),
        node("node-y", zone="zone2"),
    ]
    pods = [
        *pods_on("node-a", 1, "foo", "bar"),
        *pods_on("node-a", 1, "foo"),
        *pods_on("node-b", 1, "foo", "bar"),
        *pods_on("node-y", 1, "foo"),
        *pods_on("node-y", 1, "foo", "bar"),
        *pods_on("node-y", 1, "foo"),
    ]
    pod = incoming("foo", "bar").spread(1, "zone", SA, FOO).spread(1, "zone", SA, BAR).obj()
    assert scores(pod, nodes, pods, failed=("node-b", "node-y")) == {"node-a": 85, "node-x": 100}


def test_other_namespaces_and_terminating_pods_do_not_count() -> None:
    nodes = FOUR_HOSTS[:2]
    terminating = pods_on("node-b", 2, "foo")
    for p in terminating:
        p.deletion_timestamp = 1.0
    pods = [*pods_on("node-a", 2, "foo", namespace="ns2"), *terminating]
    pod = incoming("foo").spread(1, "kubernetes.io/hostname", SA, FOO).obj()
    assert scores(pod, nodes, pods) == {"node-a": 100, "node-b": 100}


def test_min_domains_has_no_effect_on_scoring() -> None:
    pods = [
        *pods_on("node-a", 2, "foo"),
        *pods_on("node-b", 1, "foo"),
        *pods_on("node-d", 3, "foo"),
    ]
    pod = incoming("foo").spread(1, "kubernetes.io/hostname", SA, FOO, minDomains=10).obj()
    assert scores(pod, FOUR_HOSTS, pods) == {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0}


def test_node_inclusion_policies_decide_which_nodes_count_for_a_zone() -> None:
    nodes = [
        node("node-a", "dedicated", zone="zone1", foo=""),
        node("node-b", zone="zone1", foo=""),
        node("node-x", zone="zone2"),
    ]
    pods = [*pods_on("node-a", 3, "foo"), *pods_on("node-x", 1, "foo")]
    honor_taints = incoming("foo").spread(1, "zone", SA, FOO, nodeTaintsPolicy="Honor").obj()
    # node-a's pods are not counted: zone1 0, zone2 1 -> node-x scores lower.
    assert scores(honor_taints, nodes, pods) == {"node-a": 100, "node-b": 100, "node-x": 0}
    ignore = incoming("foo").spread(1, "zone", SA, FOO).obj()
    # zone1 3, zone2 1, weight log(4): raw 4/4/1 -> 100*(5-s)/4.
    assert scores(ignore, nodes, pods) == {"node-a": 25, "node-b": 25, "node-x": 100}
    honor_affinity = incoming("foo").node_selector({"foo": ""}).spread(1, "zone", SA, FOO).obj()
    assert scores(honor_affinity, nodes, pods, failed=("node-x",)) == {
        "node-a": 100,
        "node-b": 100,
    }


def test_match_label_keys_narrow_the_selector() -> None:
    nodes = FOUR_HOSTS[:2]
    old = pods_on("node-a", 2, "foo")
    for p in old:
        p.labels = {"foo": "", "rev": "1"}
    pod = (
        incoming("foo")
        .label("rev", "2")
        .spread(1, "kubernetes.io/hostname", SA, FOO, matchLabelKeys=["rev"])
        .obj()
    )
    assert scores(pod, nodes, old) == {"node-a": 100, "node-b": 100}


def test_rounding_is_half_away_from_zero() -> None:
    assert go_round(0.5) == 1
    assert go_round(2.5) == 3  # Python's round gives 2
    assert go_round(0.49999999999999994) == 0


def test_pre_score_skips_without_soft_constraints_and_on_an_empty_cluster() -> None:
    hard = incoming("foo").spread(1, "zone", "DoNotSchedule", FOO).obj()
    snap = make_snapshot(FOUR_HOSTS, [])
    assert plugin_for(snap).pre_score(CycleState(), hard, snap.list()).is_skip()
    empty = make_snapshot([], [])
    soft = incoming("foo").spread(1, "zone", SA, FOO).obj()
    assert plugin_for(empty).pre_score(CycleState(), soft, []).is_skip()
