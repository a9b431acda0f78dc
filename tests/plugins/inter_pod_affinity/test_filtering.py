"""Filter rules, ported from kube-scheduler v1.37's interpodaffinity filtering_test.go (the
classic algorithm: InterPodAffinityHostnameFastPath is alpha and off)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.api.objects import Node, Pod
from scheduler.framework.status import Code
from scheduler.plugins.inter_pod_affinity.filtering import (
    ERR_AFFINITY,
    ERR_ANTI_AFFINITY,
    ERR_EXISTING_ANTI_AFFINITY,
)
from scheduler.testing import make_node, make_pod, run_plugin
from tests.plugins.inter_pod_affinity.terms import (
    affinity,
    expr,
    plugin_on,
    term,
)

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
UNSCHEDULABLE = Code.UNSCHEDULABLE
AFFINITY = (UNRESOLVABLE, ERR_AFFINITY)
ANTI = (UNSCHEDULABLE, ERR_ANTI_AFFINITY)
EXISTING = (UNSCHEDULABLE, ERR_EXISTING_ANTI_AFFINITY)

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}


def outcome(
    pod: Pod,
    nodes: Sequence[Node],
    pods: Sequence[Pod] = (),
    namespaces: dict[str, dict[str, str]] | None = None,
) -> dict[str, tuple[Code, str] | None] | str:
    """Per node, None (fits) or (code, reason); "skip" when PreFilter returns Skip. run_plugin
    also fails the test when filter_batch disagrees with filter."""
    plugin, snap, _ = plugin_on(list(nodes), pods, namespaces=namespaces)
    run = run_plugin(plugin, pod, snap)
    if run.pre_filter_status is not None and run.pre_filter_status.is_skip():
        return "skip"
    found: dict[str, tuple[Code, str] | None] = {}
    for name, status in run.filter_statuses.items():
        found[name] = None if status is None else (status.code, status.message())
    rows = snap.table.rows(found)
    batch = plugin.filter_batch_statuses(
        run.state, pod, snap.table, np.array(rows, np.intp)
    ).to_list()
    assert [None if s is None else (s.code, s.message()) for s in batch] == list(found.values())
    return found


def pod(name: str = "pending", **kw: Any) -> Pod:
    return make_pod(name, **kw)


def running(name: str, node: str, **kw: Any) -> Pod:
    return make_pod(name, node_name=node, **kw)


def test_a_pod_without_affinity_and_no_anti_affinity_around_is_skipped() -> None:
    assert outcome(pod(), [make_node("n1")]) == "skip"


def test_existing_anti_affinity_with_a_key_no_node_has_is_skipped() -> None:
    """Upstream: the existing pod's term is counted only where its node has the key."""
    existing = running(
        "e",
        "nodeA",
        affinity=affinity(
            anti_required=[term("invalid-node-label", labelSelector=expr("foo", "Exists"))]
        ),
    )
    nodes = [make_node("nodeA", labels={"region": "r1"})]
    assert outcome(pod(labels={"foo": ""}), nodes, [existing]) == "skip"


def test_required_affinity_in_operator_matching_the_existing_pod() -> None:
    nodes = [make_node("n1", labels=CHINA)]
    existing = running("p1", "n1", labels={"service": "securityscan"})
    wanted = pod(affinity=affinity(required=[term("region", {"service": "securityscan"})]))
    assert outcome(wanted, nodes, [existing]) == {"n1": None}


def test_required_affinity_not_in_operator_matching_the_existing_pod() -> None:
    nodes = [make_node("n1", labels=CHINA)]
    existing = running("p1", "n1", labels={"service": "securityscan"})
    selector = expr("service", "NotIn", "securityscan3", "value3")
    wanted = pod(affinity=affinity(required=[term("region", labelSelector=selector)]))
    assert outcome(wanted, nodes, [existing]) == {"n1": None}


def test_affinity_does_not_match_a_pod_of_another_namespace() -> None:
    nodes = [make_node("n1", labels=CHINA)]
    existing = running("p1", "n1", labels={"service": "securityscan"})
    wanted = pod(
        affinity=affinity(
            required=[term("region", {"service": "securityscan"}, namespaces=["DiffNameSpace"])]
        )
    )
    assert outcome(wanted, nodes, [existing]) == {"n1": AFFINITY}


def test_affinity_fails_with_an_unmatching_selector() -> None:
    nodes = [make_node("n1", labels=CHINA)]
    existing = running("p1", "n1", labels={"service": "securityscan"})
    wanted = pod(affinity=affinity(required=[term("region", {"service": "antivirusscan"})]))
    assert outcome(wanted, nodes, [existing]) == {"n1": AFFINITY}


def test_one_matching_pod_makes_its_whole_domain_feasible() -> None:
    nodes = [
        make_node("node1", labels=CHINA),
        make_node("node2", labels=CHINA_AZ1),
        make_node("node3", labels=INDIA),
    ]
    existing = running("p1", "node1", labels={"foo": "bar"})
    wanted = pod(affinity=affinity(required=[term("region", {"foo": "bar"})]))
    assert outcome(wanted, nodes, [existing]) == {"node1": None, "node2": None, "node3": AFFINITY}


def test_the_first_pod_of_a_group_matching_itself_may_go_anywhere_with_the_keys() -> None:
    labels = {"foo": "bar", "service": "securityscan"}
    terms = [term("zone", {"foo": "bar"}), term("zone", {"service": "securityscan"})]
    existing = running("p1", "nodeA", labels={"foo": "bar"})  # matches one term only
    nodes = [
        make_node("nodeA", labels={"zone": "az1", "hostname": "h1"}),
        make_node("nodeB", labels={"zone": "az2", "hostname": "h2"}),
    ]
    first = pod(labels=labels, affinity=affinity(required=terms))
    assert outcome(first, nodes, [existing]) == {"nodeA": None, "nodeB": None}
    without_key = [
        make_node("nodeA", labels={"zoneLabel": "az1"}),
        make_node("nodeB", labels={"zoneLabel": "az2"}),
    ]
    assert outcome(first, without_key, [existing]) == {"nodeA": AFFINITY, "nodeB": AFFINITY}


def test_the_first_pod_rule_needs_the_pod_to_match_its_own_terms() -> None:
    nodes = [make_node("nodeA", labels={"zone": "az1"})]
    lonely = pod(
        labels={"app": "other"}, affinity=affinity(required=[term("zone", {"app": "web"})])
    )
    assert outcome(lonely, nodes) == {"nodeA": AFFINITY}


def test_the_first_pod_rule_ends_once_a_matching_pod_runs_anywhere() -> None:
    nodes = [make_node("nodeA", labels={"zone": "az1"}), make_node("nodeB", labels={"zone": "az2"})]
    group = affinity(required=[term("zone", {"app": "web"})])
    existing = running("web-0", "nodeA", labels={"app": "web"})
    second = pod(labels={"app": "web"}, affinity=group)
    assert outcome(second, nodes, [existing]) == {"nodeA": None, "nodeB": AFFINITY}


def test_all_affinity_terms_must_be_matched_by_the_same_pod() -> None:
    nodes = [
        make_node("nodeA", labels={"region": "r1", "zone": "z1", "hostname": "nodeA"}),
        make_node("nodeB", labels={"region": "r1", "zone": "z2", "hostname": "nodeB"}),
    ]
    terms = [
        term("region", labelSelector=expr("foo", "Exists")),
        term("zone", labelSelector=expr("bar", "Exists")),
    ]
    wanted = pod(affinity=affinity(required=terms))
    one_pod = [running("pod1", "nodeA", labels={"foo": "", "bar": ""})]
    assert outcome(wanted, nodes, one_pod) == {"nodeA": None, "nodeB": AFFINITY}
    split = [
        running("pod1", "nodeA", labels={"foo": ""}),
        running("pod2", "nodeB", labels={"bar": ""}),
    ]
    assert outcome(wanted, nodes, split) == {"nodeA": AFFINITY, "nodeB": AFFINITY}


def test_anti_affinity_rejects_the_whole_domain_and_spares_nodes_without_the_key() -> None:
    nodes = [
        make_node("nodeA", labels=CHINA),
        make_node("nodeB", labels=CHINA_AZ1),
        make_node("nodeC", labels=INDIA),
        make_node("nodeD", labels={"az": "az1"}),
    ]
    existing = running("p1", "nodeA", labels={"foo": "abc"})
    wanted = pod(affinity=affinity(anti_required=[term("region", {"foo": "abc"})]))
    assert outcome(wanted, nodes, [existing]) == {
        "nodeA": ANTI,
        "nodeB": ANTI,
        "nodeC": None,
        "nodeD": None,
    }


def test_any_anti_affinity_term_matching_rejects() -> None:
    nodes = [
        make_node("nodeA", labels={"region": "r1", "zone": "z1"}),
        make_node("nodeB", labels={"region": "r1", "zone": "z2"}),
    ]
    existing = running("p", "nodeA", labels={"foo": "abc", "service": "securityscan"})
    terms = [term("region", {"foo": "abc"}), term("zone", {"service": "securityscan"})]
    assert outcome(pod(affinity=affinity(anti_required=terms)), nodes, [existing]) == {
        "nodeA": ANTI,
        "nodeB": ANTI,
    }


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    nodes = [
        make_node("nodeA", labels={"region": "r1", "zone": "z1"}),
        make_node("nodeB", labels={"region": "r1", "zone": "z2"}),
        make_node("nodeC", labels={"region": "r2", "zone": "z3"}),
    ]
    existing = [
        running(
            "e1",
            "nodeA",
            affinity=affinity(anti_required=[term("zone", labelSelector=expr("foo", "Exists"))]),
        ),
        running(
            "e2",
            "nodeA",
            affinity=affinity(anti_required=[term("region", labelSelector=expr("bar", "Exists"))]),
        ),
    ]
    wanted = pod(labels={"foo": "", "bar": ""})
    assert outcome(wanted, nodes, existing) == {"nodeA": EXISTING, "nodeB": EXISTING, "nodeC": None}
    only_foo = pod(labels={"foo": ""})
    assert outcome(only_foo, nodes, existing) == {"nodeA": EXISTING, "nodeB": None, "nodeC": None}


def test_existing_anti_affinity_of_another_namespace_does_not_select_the_pod() -> None:
    nodes = [
        make_node("nodeA", labels=CHINA),
        make_node("nodeB", labels=CHINA_AZ1),
        make_node("nodeC", labels=INDIA),
    ]
    existing = [
        running("a", "nodeA", namespace="NS1", labels={"foo": "bar"}),
        running(
            "c",
            "nodeC",
            namespace="NS2",
            affinity=affinity(anti_required=[term("region", {"foo": "123"})]),
        ),
    ]
    wanted = pod(
        namespace="NS1",
        labels={"foo": "123"},
        affinity=affinity(anti_required=[term("region", {"foo": "bar"})]),
    )
    assert outcome(wanted, nodes, existing) == {"nodeA": ANTI, "nodeB": ANTI, "nodeC": None}


def test_affinity_is_checked_before_anti_affinity_and_existing_anti_affinity() -> None:
    nodes = [
        make_node("n1", labels={"zone": "a"}),
        make_node("n2", labels={"zone": "b"}),
        make_node("n3", labels={"zone": "c"}),
    ]
    existing = [
        running("web", "n1", labels={"app": "web"}),
        running("db", "n1", labels={"app": "db"}),
        running(
            "guard",
            "n2",
            labels={"app": "web"},
            affinity=affinity(anti_required=[term("zone", {"app": "api"})]),
        ),
    ]
    wanted = pod(
        labels={"app": "api"},
        affinity=affinity(
            required=[term("zone", {"app": "web"})], anti_required=[term("zone", {"app": "db"})]
        ),
    )
    assert outcome(wanted, nodes, existing) == {"n1": ANTI, "n2": EXISTING, "n3": AFFINITY}


def test_namespace_selector_of_the_pod_selects_namespaces_by_their_labels() -> None:
    nodes = [make_node("n1", labels={"zone": "a"}), make_node("n2", labels={"zone": "b"})]
    existing = [running("w", "n1", namespace="team-a", labels={"app": "web"})]
    namespaces = {"team-a": {"team": "a"}, "team-b": {"team": "b"}, "default": {}}
    selected = term("zone", {"app": "web"}, namespaceSelector={"matchLabels": {"team": "a"}})
    other = term("zone", {"app": "web"}, namespaceSelector={"matchLabels": {"team": "b"}})
    everything = term("zone", {"app": "web"}, namespaceSelector={})
    assert outcome(pod(affinity=affinity(required=[selected])), nodes, existing, namespaces) == {
        "n1": None,
        "n2": AFFINITY,
    }
    assert outcome(pod(affinity=affinity(required=[other])), nodes, existing, namespaces) == {
        "n1": AFFINITY,
        "n2": AFFINITY,
    }
    assert outcome(
        pod(affinity=affinity(anti_required=[everything])), nodes, existing, namespaces
    ) == {"n1": ANTI, "n2": None}
    # The namespace must be known: an unknown one matches only the empty selector.
    assert outcome(pod(affinity=affinity(required=[selected])), nodes, existing, {}) == {
        "n1": AFFINITY,
        "n2": AFFINITY,
    }


def test_an_existing_pods_namespace_selector_reads_the_incoming_pods_namespace_labels() -> None:
    nodes = [make_node("n1", labels={"zone": "a"}), make_node("n2", labels={"zone": "b"})]
    guard = term("zone", {"app": "web"}, namespaceSelector={"matchLabels": {"team": "a"}})
    existing = [running("g", "n1", namespace="ops", affinity=affinity(anti_required=[guard]))]
    web = pod(namespace="team-a", labels={"app": "web"})
    assert outcome(web, nodes, existing, {"team-a": {"team": "a"}}) == {"n1": EXISTING, "n2": None}
    assert outcome(web, nodes, existing, {"team-a": {"team": "b"}}) == "skip"
    # Go matches an unknown namespace as an empty label set: DoesNotExist selects it.
    absent = term("zone", {"app": "web"}, namespaceSelector=expr("team", "DoesNotExist"))
    existing = [running("g", "n1", namespace="ops", affinity=affinity(anti_required=[absent]))]
    assert outcome(web, nodes, existing, {}) == {"n1": EXISTING, "n2": None}


def test_nodes_lacking_the_affinity_key_fail_even_for_the_first_pod() -> None:
    nodes = [make_node("n1", labels={"rack": "r1"}), make_node("n2")]
    first = pod(labels={"app": "web"}, affinity=affinity(required=[term("rack", {"app": "web"})]))
    assert outcome(first, nodes) == {"n1": None, "n2": AFFINITY}
