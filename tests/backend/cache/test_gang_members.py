"""The cache's index of a group's bound and assumed members (Handle.gang_members)."""

from __future__ import annotations

from scheduler.api.gang import GangRef, GangSource
from scheduler.api.objects import replace_pod
from scheduler.backend.cache import Cache
from scheduler.testing import make_node
from tests.plugins.coscheduling.objects import member

G = GangRef(GangSource.SCHEDULER_PLUGINS, "default", "g")


def names(pods: tuple[object, ...]) -> list[str]:
    return sorted(p.name for p in pods)  # type: ignore[attr-defined]


def test_members_by_state_through_assume_confirm_forget_and_remove() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    bound = member("b", "g", node_name="n1")
    cache.add_pod(bound)
    assumed = replace_pod(member("a", "g"), node_name="n1")
    forgotten = replace_pod(member("f", "g"), node_name="n1")
    cache.assume_pod(assumed)
    cache.assume_pod(forgotten)
    cache.add_pod(member("x", "other", node_name="n1"))
    members = cache.gang_members(G)
    assert (names(members.bound), names(members.assumed)) == (["b"], ["a", "f"])
    assert members.placed == 3

    cache.forget_pod(forgotten)
    cache.add_pod(assumed)  # the informer confirms the binding
    members = cache.gang_members(G)
    assert (names(members.bound), names(members.assumed)) == (["a", "b"], [])

    cache.remove_pod(bound)
    cache.remove_pod(assumed)
    assert cache.gang_members(G).placed == 0
    assert G not in cache._gangs


def test_a_label_change_moves_a_pod_between_groups() -> None:
    cache = Cache()
    old = member("p", "g", node_name="n1")
    new = member("p", "h", node_name="n1")
    cache.add_pod(old)
    cache.update_pod(old, new)
    assert cache.gang_members(G).placed == 0
    assert cache.gang_members(GangRef(GangSource.SCHEDULER_PLUGINS, "default", "h")).placed == 1
