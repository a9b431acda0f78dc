import gc
from collections.abc import Iterator

import pytest

from scheduler import metrics
from scheduler.gc_pauses import GcPolicy


def _count(generation: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "kube_pysched_gc_pause_seconds_count", {"generation": generation}
    )
    return value or 0.0


@pytest.fixture
def policy() -> Iterator[GcPolicy]:
    """A policy checking every 1000 s (the tests call `check` themselves)."""
    made = GcPolicy(check_seconds=1000.0)
    made.install()
    try:
        yield made
    finally:
        made.release()


def test_each_collection_is_timed_once_under_its_generation(policy: GcPolicy) -> None:
    policy.install()  # idempotent: one hook
    gc.disable()  # no automatic collection between the readings
    try:
        before = (_count("0"), _count("2"))
        gc.collect(2)
        gc.collect(0)
        after = (_count("0"), _count("2"))
    finally:
        gc.enable()
    assert (after[0] - before[0], after[1] - before[1]) == (1.0, 1.0)


def _walked(obj: object) -> bool:
    """Whether a collection would walk `obj` (frozen objects are not in any generation)."""
    return any(o is obj for o in gc.get_objects())


def test_the_synced_heap_is_frozen_and_later_survivors_after_each_full_collection(
    policy: GcPolicy,
) -> None:
    synced = [{"node": [1]}]
    frozen = policy.freeze_synced_heap()
    later = [{"pod": [2]}]
    assert frozen == gc.get_freeze_count() > 0
    assert not _walked(synced)
    assert _walked(later)
    gc.collect()  # a full collection: its survivor is frozen as well
    assert not _walked(later)
    policy.release()
    assert gc.get_freeze_count() == 0 and _walked(synced)


def test_a_complete_collection_once_the_frozen_heap_has_doubled(policy: GcPolicy) -> None:
    policy.freeze_synced_heap()
    assert policy.check() is False
    cycles = []
    for _ in range(gc.get_freeze_count()):  # as many objects again, in reference cycles
        cycle: list[object] = []
        cycle.append(cycle)
        cycles.append(cycle)
    gc.collect()  # survivors frozen: the frozen heap doubled
    del cycles  # now garbage, but frozen: only a complete collection finds it
    doubled = gc.get_freeze_count()
    assert policy.check() is True
    assert gc.get_freeze_count() < doubled / 1.5
