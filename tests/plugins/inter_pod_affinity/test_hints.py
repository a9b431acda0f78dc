"""EventsToRegister and QueueingHints, as kube-scheduler v1.37's plugin_test.go cases."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Pod
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.plugins.inter_pod_affinity.hints import (
    after_assigned_pod_change,
    after_node_change,
    after_target_pod_label_update,
    events_to_register,
)
from scheduler.testing import make_node, make_pod
from tests.plugins.inter_pod_affinity.terms import affinity, term

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def pending(**kw: Any) -> Pod:
    return make_pod("pending", **kw)


def assigned(labels: dict[str, str], **kw: Any) -> Pod:
    return make_pod("other", node_name="n1", labels=labels, **kw)


WANTS_WEB = pending(affinity=affinity(required=[term("zone", {"app": "web"})]))
AVOIDS_DB = pending(
    labels={"app": "api"}, affinity=affinity(anti_required=[term("zone", {"app": "db"})])
)


def test_events() -> None:
    events = {(e.event.resource, e.event.action_type) for e in events_to_register()}
    assert events == {
        (
            EventResource.ASSIGNED_POD,
            ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
        ),
        (EventResource.TARGET_POD, ActionType.UPDATE_POD_LABEL),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    }
    assert all(e.hint_fn is not None for e in events_to_register())


def test_unscheduled_pods_never_help() -> None:
    unscheduled = make_pod("other", labels={"app": "web"})
    assert after_assigned_pod_change(WANTS_WEB, None, unscheduled) == SKIP
    assert after_assigned_pod_change(WANTS_WEB, unscheduled, None) == SKIP
    nominated = make_pod("other", labels={"app": "web"}, nominated_node_name="n1")
    assert after_assigned_pod_change(WANTS_WEB, None, nominated) == QUEUE


def test_added_pod_helps_when_it_matches_all_affinity_terms() -> None:
    assert after_assigned_pod_change(WANTS_WEB, None, assigned({"app": "web"})) == QUEUE
    assert after_assigned_pod_change(WANTS_WEB, None, assigned({"app": "db"})) == SKIP
    assert after_assigned_pod_change(AVOIDS_DB, None, assigned({"app": "web"})) == SKIP


def test_updated_pod_helps_when_it_starts_matching_affinity_or_stops_matching_anti() -> None:
    web, db, other = assigned({"app": "web"}), assigned({"app": "db"}), assigned({"app": "x"})
    assert after_assigned_pod_change(WANTS_WEB, other, web) == QUEUE
    assert after_assigned_pod_change(WANTS_WEB, web, web) == SKIP
    assert after_assigned_pod_change(WANTS_WEB, web, other) == SKIP
    assert after_assigned_pod_change(AVOIDS_DB, db, other) == QUEUE
    assert after_assigned_pod_change(AVOIDS_DB, other, db) == SKIP


def test_deleted_pod_helps_when_anti_affinity_relates_them_either_way() -> None:
    assert after_assigned_pod_change(AVOIDS_DB, assigned({"app": "db"}), None) == QUEUE
    assert after_assigned_pod_change(AVOIDS_DB, assigned({"app": "x"}), None) == SKIP
    guard = assigned({"app": "x"}, affinity=affinity(anti_required=[term("zone", {"app": "api"})]))
    assert after_assigned_pod_change(AVOIDS_DB, guard, None) == QUEUE
    assert after_assigned_pod_change(pending(labels={"app": "y"}), guard, None) == SKIP
    assert after_assigned_pod_change(WANTS_WEB, assigned({"app": "web"}), None) == SKIP


def test_target_pod_label_update_always_queues() -> None:
    assert after_target_pod_label_update(AVOIDS_DB, None, None) == QUEUE


def test_node_added_or_relabelled() -> None:
    zone_a = make_node("n", labels={"zone": "a"})
    zone_b = make_node("n", labels={"zone": "b"})
    no_zone = make_node("n")
    # Affinity: a node bringing the key, or moving to another domain of it.
    assert after_node_change(WANTS_WEB, None, zone_a) == QUEUE
    assert after_node_change(WANTS_WEB, None, no_zone) == SKIP
    assert after_node_change(WANTS_WEB, no_zone, zone_a) == QUEUE
    assert after_node_change(WANTS_WEB, zone_a, zone_b) == QUEUE
    assert after_node_change(WANTS_WEB, zone_a, no_zone) == SKIP
    assert after_node_change(WANTS_WEB, zone_a, zone_a) == SKIP
    # Anti-affinity: any added node, or one leaving or moving within the key.
    assert after_node_change(AVOIDS_DB, None, no_zone) == QUEUE
    assert after_node_change(AVOIDS_DB, zone_a, no_zone) == QUEUE
    assert after_node_change(AVOIDS_DB, zone_a, zone_b) == QUEUE
    assert after_node_change(AVOIDS_DB, no_zone, zone_a) == SKIP
    # No required terms at all: node events never help this plugin.
    assert after_node_change(pending(), None, zone_a) == SKIP
