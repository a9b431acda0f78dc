"""Topology spread constraints parsed with the pod, and the selector objects of default
spreading (Services, ReplicationControllers, ReplicaSets, StatefulSets)."""

from __future__ import annotations

import pytest

from scheduler.api.parse import ParseError, parse_pod, parse_service, parse_workload
from scheduler.api.spread import TopologySpreadConstraint
from scheduler.testing import pod_json


def test_constraints_are_typed_with_unset_fields_as_none() -> None:
    raw = pod_json(
        "p",
        topology_spread_constraints=[
            {
                "maxSkew": 2,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "minDomains": 3,
                "nodeTaintsPolicy": "Honor",
                "matchLabelKeys": ["rev"],
            },
            {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "ScheduleAnyway"},
        ],
    )
    first, second = parse_pod(raw).topology_spread_constraints
    assert first.max_skew == 2 and first.min_domains == 3
    assert first.selector is not None and first.selector.matches({"app": "web"})
    assert (first.node_affinity_policy, first.node_taints_policy) == (None, "Honor")
    assert first.match_label_keys == ("rev",)
    assert second == TopologySpreadConstraint(1, "host", "ScheduleAnyway")  # nil selector


def test_a_bad_selector_is_a_parse_error_naming_the_constraint() -> None:
    bad = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}
    raw = pod_json(
        "p",
        topology_spread_constraints=[
            {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "x", "labelSelector": bad},
        ],
    )
    with pytest.raises(ParseError, match=r"spec.topologySpreadConstraints\[1\]"):
        parse_pod(raw)


def test_owner_references_keep_their_api_version() -> None:
    raw = pod_json("p")
    raw["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "rs",
            "uid": "u",
            "controller": True,
        }
    ]
    ref = parse_pod(raw).controller_ref()
    assert ref is not None and (ref.api_version, ref.kind, ref.name) == (
        "apps/v1",
        "ReplicaSet",
        "rs",
    )


def test_selector_objects() -> None:
    svc = parse_service(
        {"metadata": {"namespace": "ns", "name": "s"}, "spec": {"selector": {"a": "1"}}}
    )
    assert (svc.namespace, svc.name, svc.selector) == ("ns", "s", {"a": "1"})
    assert parse_service({"metadata": {"name": "headless"}, "spec": {}}).selector is None
    rc = parse_workload(
        "ReplicationController", {"metadata": {"name": "rc"}, "spec": {"selector": {"a": "1"}}}
    )
    assert rc.set_selector == {"a": "1"} and rc.selector is None
    rs = parse_workload(
        "ReplicaSet",
        {"metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": {"a": "1"}}}},
    )
    assert rs.selector is not None and rs.selector.matches({"a": "1"})
    invalid = {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}
    ss = parse_workload("StatefulSet", {"metadata": {"name": "ss"}, "spec": {"selector": invalid}})
    assert ss.selector is None  # kube-scheduler adds nothing from an invalid selector
