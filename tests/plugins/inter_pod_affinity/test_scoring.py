"""PreScore/Score/NormalizeScore: raw scores and normalized ones derived by hand from
kube-scheduler's arithmetic (int64 sums per topology domain, then
int64(100 * (float64(s - min) / float64(max - min)))); cases ported from scoring_test.go."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.api.objects import Node, Pod
from scheduler.plugins.inter_pod_affinity.scoring import normalize
from scheduler.testing import make_node, make_pod, run_plugin
from tests.plugins.inter_pod_affinity.terms import affinity, expr, plugin_on, term, weighted

CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}


def scores(
    pod: Pod,
    nodes: Sequence[Node],
    pods: Sequence[Pod] = (),
    args: dict[str, Any] | None = None,
    namespaces: dict[str, dict[str, str]] | None = None,
) -> tuple[dict[str, int], dict[str, int]] | str:
    """(raw, normalized) per node, or "skip" when PreScore skips. run_plugin fails the test
    when score_batch disagrees with score."""
    plugin, snap, _ = plugin_on(list(nodes), pods, args=args, namespaces=namespaces)
    run = run_plugin(plugin, pod, snap)
    if run.pre_score_status is not None and run.pre_score_status.is_skip():
        return "skip"
    assert run.score_status is None
    return run.raw_scores, run.scores


def running(name: str, node: str, **kw: Any) -> Pod:
    return make_pod(name, node_name=node, **kw)


def test_a_pod_without_affinity_among_pods_without_affinity_skips() -> None:
    nodes = [make_node("node1", labels=CHINA)]
    assert scores(make_pod("p"), nodes, [running("e", "node1", labels=S1)]) == "skip"


def test_different_operators_and_partial_matches() -> None:
    """affinity3: weight 8 for NotIn S1 + In S2, weight 2 for Exists security + no wrongkey.
    China (node1, S1): 2; India (node2, S2): 8 + 2; node3 has no region: 0."""
    both = {
        "matchExpressions": [
            {"key": "security", "operator": "NotIn", "values": ["S1"]},
            {"key": "security", "operator": "In", "values": ["S2"]},
        ]
    }
    exists = {
        "matchExpressions": [
            {"key": "security", "operator": "Exists"},
            {"key": "wrongkey", "operator": "DoesNotExist"},
        ]
    }
    pod = make_pod(
        "p",
        labels=S1,
        affinity=affinity(
            preferred=[
                weighted(8, term("region", labelSelector=both)),
                weighted(2, term("region", labelSelector=exists)),
            ]
        ),
    )
    nodes = [
        make_node("node1", labels=CHINA),
        make_node("node2", labels=INDIA),
        make_node("node3", labels=AZ1),
    ]
    existing = [
        running("a", "node1", labels=S1),
        running("b", "node2", labels=S2),
        running("c", "node3", labels=S1),
    ]
    assert scores(pod, nodes, existing) == (
        {"node1": 2, "node2": 10, "node3": 0},
        {"node1": 20, "node2": 100, "node3": 0},
    )


def test_normalize_uses_kube_schedulers_float_steps() -> None:
    """29 of 100: 100 * (29 / 100) is 28.999999999999996 in float64, so 28 (not 29)."""
    pod = make_pod(
        "p",
        affinity=affinity(
            preferred=[
                weighted(29, term("zone", {"app": "x"})),
                weighted(71, term("zone", {"app": "y"})),
            ]
        ),
    )
    nodes = [
        make_node("n1", labels={"zone": "a"}),
        make_node("n2", labels={"zone": "b"}),
        make_node("n3", labels={"zone": "c"}),
    ]
    existing = [
        running("x1", "n1", labels={"app": "x"}),
        running("x2", "n2", labels={"app": "x"}),
        running("y2", "n2", labels={"app": "y"}),
    ]
    assert scores(pod, nodes, existing) == (
        {"n1": 29, "n2": 100, "n3": 0},
        {"n1": 28, "n2": 100, "n3": 0},
    )


def test_normalize_of_equal_scores_is_zero_and_of_negatives_shifts() -> None:
    column = np.array([7, 7, 7], np.int64)
    normalize(column)
    assert column.tolist() == [0, 0, 0]
    column = np.array([-5, 0, -2], np.int64)
    normalize(column)
    assert column.tolist() == [0, 100, 60]


def test_preferred_anti_affinity_scores_negative_per_matching_pod() -> None:
    """One node holds two matching pods, the other one: -10 and -5, normalized 0 and 100."""
    pod = make_pod("p", affinity=affinity(anti_preferred=[weighted(5, term("az", S1))]))
    nodes = [make_node("node1", labels=AZ1), make_node("node2", labels=AZ2)]
    existing = [
        running("a", "node1", labels=S1),
        running("b", "node1", labels=S1),
        running("c", "node2", labels=S1),
    ]
    assert scores(pod, nodes, existing) == (
        {"node1": -10, "node2": -5},
        {"node1": 0, "node2": 100},
    )


def test_existing_pods_preferred_terms_score_the_incoming_pod_symmetrically() -> None:
    """An existing pod (India) prefers S2 in its region with weight 6; another (China, az)
    avoids S2 in its az with weight 5. The incoming S2 pod: India +6, China node -5."""
    stay_with_s2 = affinity(preferred=[weighted(6, term("region", S2))])
    away_from_s2 = affinity(anti_preferred=[weighted(5, term("az", S2))])
    nodes = [
        make_node("node1", labels={**CHINA, **AZ1}),
        make_node("node2", labels=INDIA),
        make_node("node3", labels=CHINA),
    ]
    existing = [
        running("a", "node1", affinity=away_from_s2),
        running("b", "node2", affinity=stay_with_s2),
    ]
    assert scores(make_pod("p", labels=S2), nodes, existing) == (
        {"node1": -5, "node2": 6, "node3": 0},
        {"node1": 0, "node2": 100, "node3": 45},
    )


def test_existing_required_affinity_weighs_hard_pod_affinity_weight_per_term() -> None:
    """The existing pod's two required terms both select the S1 pod: 2 x weight in China."""
    hard = affinity(
        required=[
            term("region", labelSelector=expr("security", "In", "S1", "value2")),
            term("region", labelSelector=expr("security", "Exists")),
        ]
    )
    nodes = [
        make_node("node1", labels=CHINA),
        make_node("node2", labels=CHINA),
        make_node("node3", labels=INDIA),
    ]
    existing = [running("a", "node1", affinity=hard)]
    pod = make_pod("p", labels=S1)
    assert scores(pod, nodes, existing) == (
        {"node1": 2, "node2": 2, "node3": 0},
        {"node1": 100, "node2": 100, "node3": 0},
    )
    assert scores(pod, nodes, existing, args={"hardPodAffinityWeight": 7}) == (
        {"node1": 14, "node2": 14, "node3": 0},
        {"node1": 100, "node2": 100, "node3": 0},
    )
    assert scores(pod, nodes, existing, args={"hardPodAffinityWeight": 0}) == "skip"


def test_ignore_preferred_terms_of_existing_pods_skips_pods_without_preferences() -> None:
    stay_with_s2 = affinity(preferred=[weighted(6, term("region", S2))])
    nodes = [make_node("node1", labels=CHINA), make_node("node2", labels=INDIA)]
    existing = [running("b", "node2", labels=S2, affinity=stay_with_s2)]
    pod = make_pod("p", labels=S2)
    ignore = {"ignorePreferredTermsOfExistingPods": True}
    assert scores(pod, nodes, existing, args=ignore) == "skip"
    assert scores(pod, nodes, existing) == ({"node1": 0, "node2": 6}, {"node1": 0, "node2": 100})
    # With preferences of its own the pod is scored, existing pods' terms included (upstream).
    own = make_pod("p", labels=S2, affinity=affinity(preferred=[weighted(1, term("region", S2))]))
    assert scores(own, nodes, existing, args=ignore) == (
        {"node1": 0, "node2": 7},
        {"node1": 0, "node2": 100},
    )


def test_preferred_terms_with_a_namespace_selector() -> None:
    namespaces = {"subteam1.team1": {"team": "team1"}, "subteam1.team2": {"team": "team2"}}
    nodes = [make_node("node1", labels=CHINA), make_node("node2", labels=INDIA)]
    existing = [
        running("a", "node1", namespace="subteam1.team1", labels=S1),
        running("b", "node2", namespace="subteam1.team2", labels=S1),
    ]
    team1 = term("region", S1, namespaceSelector={"matchLabels": {"team": "team1"}})
    pod = make_pod("p", affinity=affinity(preferred=[weighted(5, team1)]))
    assert scores(pod, nodes, existing, namespaces=namespaces) == (
        {"node1": 5, "node2": 0},
        {"node1": 100, "node2": 0},
    )
    not_team1 = term("region", S1, namespaceSelector=expr("team", "NotIn", "team1"))
    pod = make_pod("p", affinity=affinity(preferred=[weighted(5, not_team1)]))
    assert scores(pod, nodes, existing, namespaces=namespaces) == (
        {"node1": 0, "node2": 5},
        {"node1": 0, "node2": 100},
    )


def test_matches_on_nodes_without_the_key_do_not_count_and_skip() -> None:
    pod = make_pod("p", affinity=affinity(preferred=[weighted(5, term("region", S1))]))
    nodes = [make_node("node1", labels=AZ1), make_node("node2", labels=AZ2)]
    assert scores(pod, nodes, [running("a", "node1", labels=S1)]) == "skip"
