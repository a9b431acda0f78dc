"""DefaultPreemption with InterPodAffinity: a lower-priority pod that blocks the preemptor by
anti-affinity (the preemptor's, or its own towards the preemptor) is a victim, found through
remove_pod on the PreFilter state; a higher-priority blocker is not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scheduler.api.objects import Pod
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.plugins.default_preemption.plugin import DefaultPreemption
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import PROFILE, Harness, poll
from tests.plugins.inter_pod_affinity.terms import HOST, affinity, term

PLUGINS = (
    "PrioritySort",
    "NodeResourcesFit",
    "InterPodAffinity",
    "DefaultPreemption",
    "DefaultBinder",
)


@pytest.fixture
def h() -> Iterator[Harness]:
    enabled = tuple(PluginRef(name, 1 if name == "NodeResourcesFit" else None) for name in PLUGINS)
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    harness = Harness(
        spec, plugins=in_tree_registry(), features=FeatureGates({"SchedulerAsyncPreemption": False})
    )
    yield harness
    harness.close()


def running(h: Harness, name: str, node: str, priority: int, **kw: object) -> Pod:
    pod = make_pod(name, node_name=node, priority=priority, start_time="2026-01-01T00:00:00Z", **kw)  # type: ignore[arg-type]
    h.add_assigned_pod(pod)
    return pod


def victims_on(h: Harness, preemptor: Pod, node: str) -> list[str] | None:
    h.cache.update_snapshot(h.snapshot)
    state = CycleState()
    _, status, _ = h.fwk.run_pre_filter_plugins(state, preemptor, h.snapshot.list())
    assert status is None
    info = h.snapshot.get(node)
    assert info is not None
    found = h.fwk.plugins["DefaultPreemption"]
    assert isinstance(found, DefaultPreemption)
    victims, _, status = found.select_victims_on_node(state, preemptor, info.snapshot(), [])
    return [v.name for v in victims] if status is None else None


AVOIDS_DB = affinity(anti_required=[term(HOST, {"app": "db"})])
AVOIDS_WEB = affinity(anti_required=[term(HOST, {"app": "web"})])


def test_a_lower_priority_pod_matching_the_preemptors_anti_affinity_is_the_victim(
    h: Harness,
) -> None:
    for name in ("n1", "n2"):
        h.add_node(make_node(name, cpu="8"))
    running(h, "db-low", "n1", 0, labels={"app": "db"})
    running(h, "db-high", "n2", 100, labels={"app": "db"})
    running(h, "bystander", "n1", 0, labels={"app": "other"})
    preemptor = make_pod("web", priority=10, labels={"app": "web"}, affinity=AVOIDS_DB)
    assert victims_on(h, preemptor, "n1") == ["db-low"]
    assert victims_on(h, preemptor, "n2") is None


def test_a_lower_priority_pod_whose_anti_affinity_selects_the_preemptor_is_the_victim(
    h: Harness,
) -> None:
    for name in ("n1", "n2"):
        h.add_node(make_node(name, cpu="8"))
    running(h, "guard-low", "n1", 0, affinity=AVOIDS_WEB)
    running(h, "guard-high", "n2", 100, affinity=AVOIDS_WEB)
    preemptor = make_pod("web", priority=10, labels={"app": "web"})
    assert victims_on(h, preemptor, "n1") == ["guard-low"]
    assert victims_on(h, preemptor, "n2") is None


def test_a_whole_cycle_nominates_the_preemptor_and_evicts_the_blocker(h: Harness) -> None:
    h.add_node(make_node("n1", cpu="8"))
    running(h, "db-low", "n1", 0, labels={"app": "db"})
    preemptor = make_pod("web", priority=10, labels={"app": "web"}, affinity=AVOIDS_DB)
    h.add_pod(preemptor)
    h.schedule_next()
    event = next(e for e in h.recorder.events if e[1] == "FailedScheduling")
    assert event[2].startswith(
        "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. preemption:"
    )
    poll(lambda: h.api.deletes == ["default/db-low"], "the victim's deletion")
    assert [p.name for p in h.queue.nominated_pods_for_node("n1")] == ["web"]
