"""NodeDeclaredFeatures: what a pod requires (each of v1.37's three inferring features),
PreFilter Skip, Filter against status.declaredFeatures, and the QueueingHints."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.api.node_features import (
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    VOLUME_BIND_MOUNT_OPTIONS,
)
from scheduler.api.objects import Node, Pod
from scheduler.api.parse import parse_node, parse_pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
    node_scheduling_properties_change,
)
from scheduler.framework.status import Code
from scheduler.plugins import node_declared_features
from scheduler.testing import build_plugin, make_snapshot, node_json, pod_json, run_plugin

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
RESTART_ALL = {
    "name": "c",
    "image": "app",
    "restartPolicyRules": [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    ],
}
BIND_OPTS = {
    "name": "c",
    "image": "app",
    "volumeMounts": [{"name": "v", "mountPath": "/v", "bindMountOptions": ["noexec"]}],
}


def pod(**spec: Any) -> Pod:
    obj = pod_json("p")
    obj["spec"].update(spec)
    return parse_pod(obj)


def node(name: str, features: list[str] | None = None) -> Node:
    obj = node_json(name)
    if features is not None:
        obj["status"]["declaredFeatures"] = features
    return parse_node(obj)


@pytest.mark.parametrize(
    ("spec", "required"),
    [
        ({}, set()),
        ({"containers": [RESTART_ALL]}, {RESTART_ALL_CONTAINERS}),
        ({"initContainers": [RESTART_ALL]}, {RESTART_ALL_CONTAINERS}),
        # Only the RestartAllContainers action needs the feature.
        (
            {"containers": [{**RESTART_ALL, "restartPolicyRules": [{"action": "Restart"}]}]},
            set(),
        ),
        ({"hostNetwork": True, "hostUsers": False}, {USER_NAMESPACES_HOST_NETWORK}),
        ({"hostNetwork": True}, set()),  # hostUsers unset is not false
        ({"hostNetwork": True, "hostUsers": True}, set()),
        ({"hostNetwork": False, "hostUsers": False}, set()),
        ({"containers": [BIND_OPTS]}, {VOLUME_BIND_MOUNT_OPTIONS}),
        ({"initContainers": [BIND_OPTS]}, {VOLUME_BIND_MOUNT_OPTIONS}),
        ({"ephemeralContainers": [BIND_OPTS]}, {VOLUME_BIND_MOUNT_OPTIONS}),
        (
            {"containers": [{**BIND_OPTS, "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]},
            set(),
        ),
        (
            {"containers": [RESTART_ALL, BIND_OPTS], "hostNetwork": True, "hostUsers": False},
            {RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK, VOLUME_BIND_MOUNT_OPTIONS},
        ),
    ],
)
def test_required_features_are_inferred_at_parse(spec: dict[str, Any], required: set[str]) -> None:
    assert pod(**spec).required_node_features == required


def test_pod_without_requirements_is_skipped() -> None:
    plugin = build_plugin(node_declared_features.SPEC)
    _, status = plugin.pre_filter(CycleState(), pod(), [])
    assert status is not None and status.code == Code.SKIP
    _, status = plugin.pre_filter(CycleState(), pod(hostNetwork=True, hostUsers=False), [])
    assert status is None


def test_filter_keeps_only_nodes_declaring_every_required_feature() -> None:
    nodes = [
        node("none"),
        node("userns", [USER_NAMESPACES_HOST_NETWORK]),
        node("restart", [RESTART_ALL_CONTAINERS]),
        node("both", sorted([RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK, "Future"])),
    ]
    snap = make_snapshot(nodes)
    plugin = build_plugin(node_declared_features.SPEC)
    p = pod(containers=[RESTART_ALL], hostNetwork=True, hostUsers=False)
    run = run_plugin(plugin, p, snap)  # also checks filter_batch against filter
    assert run.feasible == ["both"]
    assert run.rejections() == dict.fromkeys(
        ("none", "userns", "restart"), "node(s) didn't match Pod's required features"
    )
    status = plugin.filter(CycleState(), p, snap.get("none"))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    single = run_plugin(plugin, pod(containers=[RESTART_ALL]), snap)
    assert single.feasible == ["restart", "both"]


@pytest.mark.parametrize("seed", range(4))
def test_filter_batch_equals_per_node_filter(seed: int) -> None:
    rng = random.Random(seed)
    names = [RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK, VOLUME_BIND_MOUNT_OPTIONS]
    nodes = [
        node(f"n{i}", sorted(rng.sample(names, rng.randrange(4))) if rng.random() < 0.8 else None)
        for i in range(30)
    ]
    snap = make_snapshot(nodes)
    plugin = build_plugin(node_declared_features.SPEC)
    specs: list[dict[str, Any]] = [
        {},
        {"containers": [RESTART_ALL]},
        {"hostNetwork": True, "hostUsers": False},
        {"containers": [BIND_OPTS, RESTART_ALL]},
    ]
    for spec in specs:
        p = pod(**spec)
        batch = plugin.filter_batch(CycleState(), p, snap.table)
        per_node = [plugin.filter(CycleState(), p, info) is None for info in snap.node_info_list]
        assert batch.tolist() == per_node


def test_events_and_hints() -> None:
    plugin = build_plugin(node_declared_features.SPEC)
    events = [e.event for e in plugin.events_to_register()]
    assert events == [
        ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
        ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE),
    ]
    p = pod(hostNetwork=True, hostUsers=False)
    bare, declaring = node("n"), node("n", [USER_NAMESPACES_HOST_NETWORK])
    assert plugin.is_schedulable_after_node_change(p, None, bare) == Q  # a new node
    assert plugin.is_schedulable_after_node_change(p, bare, declaring) == Q
    assert plugin.is_schedulable_after_node_change(p, declaring, bare) == Q  # any change
    assert (
        plugin.is_schedulable_after_node_change(
            p, declaring, node("n", [USER_NAMESPACES_HOST_NETWORK])
        )
        == SKIP
    )
    same = pod(hostNetwork=True, hostUsers=False, nodeSelector={"a": "b"})
    assert plugin.is_schedulable_after_target_pod_update(p, p, same) == SKIP
    fewer = pod(hostNetwork=True)
    assert plugin.is_schedulable_after_target_pod_update(p, p, fewer) == Q


def test_declared_feature_change_is_a_node_update_event() -> None:
    old, new = node("n"), node("n", [VOLUME_BIND_MOUNT_OPTIONS])
    assert node_scheduling_properties_change(new, old) == [
        ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE)
    ]
    assert node_scheduling_properties_change(new, node("n", [VOLUME_BIND_MOUNT_OPTIONS])) == []
