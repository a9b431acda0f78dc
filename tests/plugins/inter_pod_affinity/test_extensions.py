"""PreFilterExtensions: add_pod/remove_pod keep the PreFilter state right for preemption's dry
runs and nominated pods; the state clones independently."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Pod
from scheduler.backend.cache import Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Status
from scheduler.testing import make_node, make_pod
from tests.plugins.inter_pod_affinity.terms import affinity, plugin_on, term

NODES = [
    make_node("n1", labels={"zone": "a"}),
    make_node("n2", labels={"zone": "a"}),
    make_node("n3", labels={"zone": "b"}),
]


def prefiltered(pod: Pod, pods: list[Pod]) -> tuple[Any, Snapshot, CycleState]:
    plugin, snap, _ = plugin_on(NODES, pods)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, snap.list())
    assert status is None
    return plugin, snap, state


def reasons(plugin: Any, snap: Snapshot, state: CycleState, pod: Pod) -> dict[str, str]:
    found: dict[str, str] = {}
    for info in snap.list():
        status: Status | None = plugin.filter(state, pod, info)
        found[info.name] = "" if status is None else status.message()
    fits = plugin.filter_batch(state, pod, snap.table)
    assert [bool(f) for f in fits] == [not found[n] for n in snap.table.names]
    return found


def node(snap: Snapshot, name: str) -> Any:
    info = snap.get(name)
    assert info is not None
    return info


ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"


def test_removing_the_pod_the_anti_affinity_hates_frees_its_zone() -> None:
    db = make_pod("db", node_name="n1", labels={"app": "db"})
    pod = make_pod("p", affinity=affinity(anti_required=[term("zone", {"app": "db"})]))
    plugin, snap, state = prefiltered(pod, [db])
    assert reasons(plugin, snap, state, pod) == {"n1": ANTI, "n2": ANTI, "n3": ""}
    dry_run = state.clone()
    assert plugin.remove_pod(dry_run, pod, db, node(snap, "n1")) is None
    assert reasons(plugin, snap, dry_run, pod) == {"n1": "", "n2": "", "n3": ""}
    # The original state is untouched by the clone's change.
    assert reasons(plugin, snap, state, pod) == {"n1": ANTI, "n2": ANTI, "n3": ""}
    assert plugin.add_pod(dry_run, pod, db, node(snap, "n3")) is None
    assert reasons(plugin, snap, dry_run, pod) == {"n1": "", "n2": "", "n3": ANTI}


def test_removing_an_existing_pod_whose_anti_affinity_selects_the_pod() -> None:
    guard = make_pod(
        "guard",
        node_name="n3",
        affinity=affinity(anti_required=[term("zone", {"app": "web"})]),
    )
    web = make_pod("web", labels={"app": "web"})
    plugin, snap, state = prefiltered(web, [guard])
    assert reasons(plugin, snap, state, web) == {"n1": "", "n2": "", "n3": EXISTING}
    assert plugin.remove_pod(state, web, guard, node(snap, "n3")) is None
    assert reasons(plugin, snap, state, web) == {"n1": "", "n2": "", "n3": ""}
    assert plugin.add_pod(state, web, guard, node(snap, "n1")) is None
    assert reasons(plugin, snap, state, web) == {"n1": EXISTING, "n2": EXISTING, "n3": ""}


def test_adding_a_nominated_pod_satisfies_affinity_and_ends_the_first_pod_rule() -> None:
    pod = make_pod(
        "p", labels={"app": "web"}, affinity=affinity(required=[term("zone", {"app": "web"})])
    )
    plugin, snap, state = prefiltered(pod, [])
    assert reasons(plugin, snap, state, pod) == {"n1": "", "n2": "", "n3": ""}  # first pod
    nominated = make_pod("web-0", labels={"app": "web"})
    assert plugin.add_pod(state, pod, nominated, node(snap, "n3")) is None
    assert reasons(plugin, snap, state, pod) == {"n1": AFFINITY, "n2": AFFINITY, "n3": ""}
    assert plugin.remove_pod(state, pod, nominated, node(snap, "n3")) is None
    assert reasons(plugin, snap, state, pod) == {"n1": "", "n2": "", "n3": ""}


def test_extensions_without_prefilter_state_error() -> None:
    plugin, snap, _ = plugin_on(NODES)
    status = plugin.add_pod(CycleState(), make_pod("p"), make_pod("q"), node(snap, "n1"))
    assert status is not None and status.code.name == "ERROR"
