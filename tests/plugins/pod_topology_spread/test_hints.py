"""EventsToRegister and the QueueingHints of kube-scheduler v1.37's PodTopologySpread."""

from __future__ import annotations

from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.testing import PodWrapper, make_snapshot
from tests.plugins.pod_topology_spread.kit import FOO, incoming, node, plugin_for

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
POD = incoming("foo").spread(1, "zone", "DoNotSchedule", FOO).obj()


def _hints() -> dict[EventResource, object]:
    plugin = plugin_for(make_snapshot())
    return {e.event.resource: e for e in plugin.events_to_register()}


def _hint(resource: EventResource, old: object, new: object) -> QueueingHint:
    return _hints()[resource].hint_fn(POD, old, new)  # type: ignore[attr-defined]


def test_registered_events() -> None:
    events = {res: e.event.action_type for res, e in _hints().items()}  # type: ignore[attr-defined]
    assert events == {
        EventResource.ASSIGNED_POD: ActionType.ADD
        | ActionType.UPDATE_POD_LABEL
        | ActionType.DELETE,
        EventResource.TARGET_POD: ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL,
        EventResource.NODE: ActionType.ADD
        | ActionType.DELETE
        | ActionType.UPDATE_NODE_LABEL
        | ActionType.UPDATE_NODE_TAINT,
    }


def test_assigned_pod_hints() -> None:
    bound = PodWrapper("b").label("foo", "").node("n").obj()
    unrelated = PodWrapper("u").label("bar", "").node("n").obj()
    other_ns = PodWrapper("o", "ns2").label("foo", "").node("n").obj()
    unbound = PodWrapper("x").label("foo", "").obj()
    nominated = PodWrapper("y").label("foo", "").nominated_node_name("n").obj()
    assert _hint(EventResource.ASSIGNED_POD, None, bound) == QUEUE
    assert _hint(EventResource.ASSIGNED_POD, bound, None) == QUEUE
    assert _hint(EventResource.ASSIGNED_POD, None, unrelated) == SKIP
    assert _hint(EventResource.ASSIGNED_POD, None, other_ns) == SKIP
    assert _hint(EventResource.ASSIGNED_POD, None, unbound) == SKIP
    assert _hint(EventResource.ASSIGNED_POD, None, nominated) == QUEUE
    relabelled = PodWrapper("b").label("bar", "").node("n").obj()
    assert _hint(EventResource.ASSIGNED_POD, bound, relabelled) == QUEUE
    same = PodWrapper("b").label("foo", "").label("x", "1").node("n").obj()
    assert _hint(EventResource.ASSIGNED_POD, bound, same) == SKIP  # still selected


def test_target_pod_hints() -> None:
    before = incoming("foo").spread(1, "zone", "DoNotSchedule", FOO).obj()
    tolerating = (
        incoming("foo").toleration("t", effect="NoSchedule").spread(1, "zone", "DoNotSchedule", FOO)
    ).obj()
    # a new toleration matters only with nodeTaintsPolicy Honor
    assert _hint(EventResource.TARGET_POD, before, tolerating) == SKIP
    relabelled = incoming("bar").spread(1, "zone", "DoNotSchedule", FOO).obj()
    assert _hint(EventResource.TARGET_POD, before, relabelled) == QUEUE
    honor = incoming("foo").spread(1, "zone", "DoNotSchedule", FOO, nodeTaintsPolicy="Honor")
    plugin = plugin_for(make_snapshot())
    fn = {e.event.resource: e for e in plugin.events_to_register()}[
        EventResource.TARGET_POD
    ].hint_fn
    honoring = honor.obj()
    honoring_tolerating = honor.toleration("t", effect="NoSchedule").obj()
    assert fn(honoring, honoring, honoring_tolerating) == QUEUE


def test_node_hints() -> None:
    zoned = node("n", zone="z1")
    unzoned = node("n")
    assert _hint(EventResource.NODE, None, zoned) == QUEUE
    assert _hint(EventResource.NODE, None, unzoned) == SKIP
    assert _hint(EventResource.NODE, zoned, None) == QUEUE
    assert _hint(EventResource.NODE, unzoned, None) == SKIP
    assert _hint(EventResource.NODE, unzoned, zoned) == QUEUE
    assert _hint(EventResource.NODE, zoned, node("n", zone="z2")) == QUEUE
    assert _hint(EventResource.NODE, zoned, node("n", zone="z1", other="x")) == SKIP
    assert _hint(EventResource.NODE, zoned, node("n", "dedicated", zone="z1")) == QUEUE
