"""NodeAffinity: nodeSelector, required terms, matchFields narrowing, scoring, addedAffinity."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.registry import ArgsError
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PreFilterResult
from scheduler.plugins import node_affinity
from scheduler.plugins.node_affinity.args import NodeAffinityArgs, decode_args
from scheduler.testing import build_plugin, make_node, make_pod, make_snapshot

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
POD_REASON = "node(s) didn't match Pod's node affinity/selector"
ENFORCED_REASON = "node(s) didn't match scheduler-enforced node affinity"


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def name_in(name: str) -> dict[str, Any]:
    return {"matchFields": [expr("metadata.name", "In", name)]}


NODES = [
    make_node("n1", labels={"zone": "a", "rank": "3"}),
    make_node("n2", labels={"zone": "b", "rank": "8"}),
    make_node("n3", labels={"zone": "c", "disk": "ssd"}),
    make_node("n4", labels={"rank": "x"}),
]


def _filter_names(plugin: Any, pod: Any) -> list[str]:
    """Nodes the per-node filter admits, after checking the batch form agrees."""
    snap = make_snapshot(NODES)
    state = CycleState()
    plugin.pre_filter(state, pod, snap.node_info_list)
    per_node = [plugin.filter(state, pod, info) is None for info in snap.node_info_list]
    assert plugin.filter_batch(state, pod, snap.table).tolist() == per_node
    return sorted(info.name for info, ok in zip(snap.node_info_list, per_node, strict=True) if ok)


@pytest.mark.parametrize(
    ("pod_kwargs", "admitted"),
    [
        ({"node_selector": {"zone": "a"}}, ["n1"]),
        ({"node_selector": {"zone": "a", "rank": "8"}}, []),
        ({"node_selector": {"zone": "nowhere"}}, []),  # a value no node carries
        (
            {"affinity": required({"matchExpressions": [expr("zone", "In", "a", "b")]})},
            ["n1", "n2"],
        ),
        (
            {"affinity": required({"matchExpressions": [expr("zone", "NotIn", "a")]})},
            ["n2", "n3", "n4"],
        ),
        ({"affinity": required({"matchExpressions": [expr("disk", "Exists")]})}, ["n3"]),
        (
            {"affinity": required({"matchExpressions": [expr("disk", "DoesNotExist")]})},
            ["n1", "n2", "n4"],
        ),
        ({"affinity": required({"matchExpressions": [expr("rank", "Gt", "5")]})}, ["n2"]),
        ({"affinity": required({"matchExpressions": [expr("rank", "Lt", "5")]})}, ["n1"]),
        (
            {
                "affinity": required(
                    {"matchExpressions": [expr("zone", "In", "a")]},
                    {"matchExpressions": [expr("disk", "Exists")]},
                )
            },
            ["n1", "n3"],
        ),
        (
            {
                "node_selector": {"zone": "c"},
                "affinity": required({"matchExpressions": [expr("zone", "In", "a", "c")]}),
            },
            ["n3"],
        ),
        ({"affinity": required(name_in("n2"))}, ["n2"]),
        (
            {"affinity": required({"matchFields": [expr("metadata.name", "NotIn", "n2")]})},
            ["n1", "n3", "n4"],
        ),
        (
            {
                "affinity": required(
                    {"matchExpressions": [expr("zone", "In", "a")], **name_in("n2")}
                )
            },
            [],
        ),
        ({"affinity": required({})}, []),  # an empty term selects nothing
        ({"affinity": required()}, []),  # and so do no terms at all
    ],
)
def test_required_filter(pod_kwargs: dict[str, Any], admitted: list[str]) -> None:
    plugin = build_plugin(node_affinity.SPEC)
    assert _filter_names(plugin, make_pod(**pod_kwargs)) == admitted


def test_filter_reason() -> None:
    plugin = build_plugin(node_affinity.SPEC)
    status = plugin.filter(CycleState(), make_pod(node_selector={"zone": "z"}), _info())
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, POD_REASON)


def _info() -> Any:
    return make_snapshot(NODES).node_info_list[0]


def test_prefilter_skips_pods_without_constraints() -> None:
    plugin = build_plugin(node_affinity.SPEC)
    assert plugin.pre_filter(CycleState(), make_pod(), []) == (None, Status(Code.SKIP))
    preferred_only = make_pod(
        affinity={"nodeAffinity": {PREF: [{"weight": 1, "preference": name_in("n1")}]}}
    )
    assert plugin.pre_filter(CycleState(), preferred_only, [])[1] == Status(Code.SKIP)
    enforced = build_plugin(
        node_affinity.SPEC, {"addedAffinity": {REQ: {"nodeSelectorTerms": [name_in("n1")]}}}
    )
    assert enforced.pre_filter(CycleState(), make_pod(), []) == (None, None)
    assert plugin.pre_filter(CycleState(), make_pod(node_selector={"a": "b"}), []) == (None, None)


@pytest.mark.parametrize(
    ("terms", "result", "status"),
    [
        ([name_in("n1")], frozenset({"n1"}), None),
        ([name_in("n1"), name_in("n3")], frozenset({"n1", "n3"}), None),
        # One term without a metadata.name In clause can match any node: no narrowing.
        ([name_in("n1"), {"matchExpressions": [expr("zone", "In", "a")]}], None, None),
        ([{"matchFields": [expr("metadata.name", "NotIn", "n1")]}], None, None),
        (
            [
                {
                    "matchFields": [
                        expr("metadata.name", "In", "n1"),
                        expr("metadata.name", "In", "n2"),
                    ]
                }
            ],
            None,
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod affinity terms conflict"),
        ),
        (
            [
                {
                    "matchFields": [
                        expr("metadata.name", "In", "n1"),
                        expr("metadata.name", "In", "n1"),
                    ]
                },
                {"matchExpressions": [expr("zone", "In", "a")], **name_in("n2")},
            ],
            frozenset({"n1", "n2"}),
            None,
        ),
    ],
)
def test_prefilter_narrows_by_match_fields(
    terms: list[dict[str, Any]], result: frozenset[str] | None, status: Status | None
) -> None:
    plugin = build_plugin(node_affinity.SPEC)
    got_result, got_status = plugin.pre_filter(
        CycleState(), make_pod(affinity=required(*terms)), []
    )
    assert got_status == status
    assert got_result == (PreFilterResult(result) if result is not None else None)


def _preferred_pod(*weighted: tuple[int, dict[str, Any]]) -> Any:
    return make_pod(
        affinity={"nodeAffinity": {PREF: [{"weight": w, "preference": t} for w, t in weighted]}}
    )


def test_preferred_terms_sum_their_weights_and_normalise() -> None:
    plugin = build_plugin(node_affinity.SPEC)
    pod = _preferred_pod(
        (5, {"matchExpressions": [expr("zone", "In", "a", "b")]}),
        (2, {"matchExpressions": [expr("rank", "Exists")]}),
        (9, name_in("n3")),
        (4, {}),  # empty preference: never counts
    )
    snap = make_snapshot(NODES)
    state = CycleState()
    assert plugin.pre_score(state, pod, snap.node_info_list) is None
    by_name = {i.name: plugin.score(state, pod, i) for i in snap.node_info_list}
    assert by_name == {"n1": 7, "n2": 7, "n3": 9, "n4": 2}
    rows = np.arange(snap.table.n, dtype=np.intp)
    batch = plugin.score_batch(state, pod, snap.table, rows)
    assert batch.tolist() == [by_name[i.name] for i in snap.node_info_list]
    scores = np.array([7, 9, 2, 0], np.int64)
    assert plugin.score_extensions().normalize_score(state, pod, scores) is None
    assert scores.tolist() == [77, 100, 22, 0]
    zeros = np.zeros(3, np.int64)
    plugin.normalize_score(state, pod, zeros)
    assert zeros.tolist() == [0, 0, 0]


def test_pre_score_skips_without_preferred_terms() -> None:
    plugin = build_plugin(node_affinity.SPEC)
    assert plugin.pre_score(CycleState(), make_pod(), []) == Status(Code.SKIP)
    added = build_plugin(
        node_affinity.SPEC, {"addedAffinity": {PREF: [{"weight": 3, "preference": name_in("n2")}]}}
    )
    assert added.pre_score(CycleState(), make_pod(), []) is None


def test_added_affinity_filters_with_its_own_reason_and_scores() -> None:
    raw = {
        "addedAffinity": {
            REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("zone", "NotIn", "c")]}]},
            PREF: [{"weight": 10, "preference": {"matchExpressions": [expr("zone", "In", "b")]}}],
        }
    }
    plugin = build_plugin(node_affinity.SPEC, raw)
    snap = make_snapshot(NODES)
    n3 = snap.get("n3")
    assert plugin.filter(CycleState(), make_pod(), n3) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ENFORCED_REASON
    )
    # The enforced affinity is checked before the pod's own.
    pod = make_pod(node_selector={"zone": "a"})
    assert plugin.filter(CycleState(), pod, n3).message() == ENFORCED_REASON
    assert plugin.filter(CycleState(), pod, snap.get("n2")).message() == POD_REASON
    assert _filter_names(plugin, make_pod()) == ["n1", "n2", "n4"]
    assert _filter_names(plugin, pod) == ["n1"]
    both = _preferred_pod((1, {"matchExpressions": [expr("zone", "Exists")]}))
    state = CycleState()
    plugin.pre_score(state, both, snap.node_info_list)
    scores = {i.name: plugin.score(state, both, i) for i in snap.node_info_list}
    assert scores == {"n1": 1, "n2": 11, "n3": 1, "n4": 0}
    rows = np.arange(snap.table.n, dtype=np.intp)
    batch = plugin.score_batch(state, both, snap.table, rows)
    assert batch.tolist() == [scores[i.name] for i in snap.node_info_list]


def test_events_to_register() -> None:
    (reg,) = build_plugin(node_affinity.SPEC).events_to_register()
    assert reg.event == ClusterEvent(
        EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL
    )


def test_node_change_hint() -> None:
    plugin = build_plugin(node_affinity.SPEC)
    hint = plugin.events_to_register()[0].hint_fn
    pod = make_pod(node_selector={"zone": "a"})
    zone_a, zone_b = make_node("n", labels={"zone": "a"}), make_node("n", labels={"zone": "b"})
    assert hint(pod, None, zone_a) == QueueingHint.QUEUE
    assert hint(pod, None, zone_b) == QueueingHint.QUEUE_SKIP
    assert hint(pod, zone_b, zone_a) == QueueingHint.QUEUE
    assert hint(pod, zone_a, zone_a) == QueueingHint.QUEUE_SKIP
    assert hint(pod, zone_a, zone_b) == QueueingHint.QUEUE_SKIP
    unconstrained = make_pod()
    assert hint(unconstrained, None, zone_b) == QueueingHint.QUEUE
    assert hint(unconstrained, zone_a, zone_b) == QueueingHint.QUEUE_SKIP


def test_node_change_hint_respects_added_affinity() -> None:
    plugin = build_plugin(
        node_affinity.SPEC,
        {
            "addedAffinity": {
                REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("pool", "Exists")]}]}
            }
        },
    )
    hint = plugin.events_to_register()[0].hint_fn
    pod = make_pod()
    assert hint(pod, None, make_node("n")) == QueueingHint.QUEUE_SKIP
    assert hint(pod, None, make_node("n", labels={"pool": "x"})) == QueueingHint.QUEUE


# --- args ------------------------------------------------------------------------------------


def test_decode_args_defaults() -> None:
    assert decode_args(None) == NodeAffinityArgs()
    assert decode_args({}) == NodeAffinityArgs()
    assert decode_args({"addedAffinity": None}) == NodeAffinityArgs()
    args = decode_args(
        {
            "addedAffinity": {
                PREF: [
                    {"weight": 0, "preference": name_in("n1")},
                    {"weight": 2, "preference": {}},
                    {"weight": 3, "preference": name_in("n1")},
                ]
            }
        }
    )
    assert args.added_required is None
    assert [t.weight for t in args.added_preferred] == [3]


_TERM_PATH = f"addedAffinity.{REQ}.nodeSelectorTerms[0]"


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        ({"addedAfinity": {}}, "addedAfinity", 'unknown field "addedAfinity"'),
        ({"addedAffinity": {"required": {}}}, "addedAffinity.required", 'unknown field "required"'),
        (
            {
                "addedAffinity": {
                    REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("k", "Is", "v")]}]}
                }
            },
            f"{_TERM_PATH}.matchExpressions[0].operator",
            'Unsupported value: "Is": supported values: "In", "NotIn", "Exists", "DoesNotExist",'
            ' "Gt", "Lt"',
        ),
        (
            {
                "addedAffinity": {
                    REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("k", "In")]}]}
                }
            },
            f"{_TERM_PATH}.matchExpressions[0].values",
            "Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {
                "addedAffinity": {
                    REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("k", "Gt", "1.5")]}]}
                }
            },
            f"{_TERM_PATH}.matchExpressions[0].values[0]",
            "Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            {
                "addedAffinity": {
                    REQ: {"nodeSelectorTerms": [{"matchExpressions": [expr("k", "Exists", "v")]}]}
                }
            },
            f"{_TERM_PATH}.matchExpressions[0].values",
            'Invalid value: ["v"]: values set must be empty for exists and does not exist',
        ),
        (
            {
                "addedAffinity": {
                    REQ: {
                        "nodeSelectorTerms": [
                            {"matchFields": [expr("metadata.name", "In", "a", "b")]}
                        ]
                    }
                }
            },
            f"{_TERM_PATH}.matchFields[0].values",
            'Invalid value: ["a","b"]: must have one element',
        ),
        (
            {
                "addedAffinity": {
                    REQ: {"nodeSelectorTerms": [{"matchFields": [expr("metadata.name", "Exists")]}]}
                }
            },
            f"{_TERM_PATH}.matchFields[0].operator",
            'Unsupported value: "Exists": supported values: "In", "NotIn"',
        ),
        (
            {
                "addedAffinity": {
                    PREF: [
                        {"weight": 1, "preference": {"matchExpressions": [expr("-bad", "Exists")]}}
                    ]
                }
            },
            f"addedAffinity.{PREF}[0].preference.matchExpressions[0].key",
            "Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
    ],
)
def test_decode_args_errors(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ArgsError) as info:
        decode_args(raw)
    assert (info.value.path, info.value.message) == (path, message)


def test_several_errors_are_reported_together() -> None:
    raw = {
        "addedAffinity": {
            REQ: {
                "nodeSelectorTerms": [
                    {"matchExpressions": [expr("k", "Is", "v")]},
                    {"matchFields": [expr("metadata.name", "In")]},
                ]
            }
        }
    }
    with pytest.raises(ArgsError) as info:
        decode_args(raw)
    assert info.value.path == ""
    assert info.value.message.startswith(f"[{_TERM_PATH}.matchExpressions[0].operator: ")
    assert "nodeSelectorTerms[1].matchFields[0].values: Invalid value: []" in info.value.message
