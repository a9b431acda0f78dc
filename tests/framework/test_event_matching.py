"""Which registered cluster events cover an incoming one (kube-scheduler's MatchClusterEvents)."""

from scheduler.framework.events import ActionType, ClusterEvent, EventResource

R = EventResource
A = ActionType


def test_generic_update_does_not_match_a_specific_update_registration() -> None:
    registered = ClusterEvent(R.TARGET_POD, A.UPDATE_POD_SCALE_DOWN)
    assert not registered.matches(ClusterEvent(R.TARGET_POD, A.UPDATE))


def test_specific_update_matches_a_generic_update_registration() -> None:
    registered = ClusterEvent(R.POD, A.UPDATE)
    assert registered.matches(ClusterEvent(R.ASSIGNED_POD, A.UPDATE_POD_LABEL))


def test_combined_actions_match_each_part() -> None:
    registered = ClusterEvent(R.NODE, A.ADD | A.UPDATE_NODE_ALLOCATABLE)
    assert registered.matches(ClusterEvent(R.NODE, A.ADD))
    assert registered.matches(ClusterEvent(R.NODE, A.UPDATE_NODE_ALLOCATABLE))
    assert not registered.matches(ClusterEvent(R.NODE, A.UPDATE_NODE_LABEL))


def test_registered_wildcard_matches_everything() -> None:
    assert ClusterEvent(R.WILDCARD, A.ALL).matches(ClusterEvent(R.NODE, A.UPDATE_NODE_LABEL))
