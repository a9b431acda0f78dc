import gc

from scheduler import gc_pauses, metrics


def _count(generation: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "kube_pysched_gc_pause_seconds_count", {"generation": generation}
    )
    return value or 0.0


def test_each_collection_is_timed_once_under_its_generation() -> None:
    gc_pauses.install()
    gc_pauses.install()  # idempotent: one hook
    gc.disable()  # no automatic collection between the readings
    try:
        before = (_count("0"), _count("2"))
        gc.collect(2)
        gc.collect(0)
        after = (_count("0"), _count("2"))
    finally:
        gc.enable()
    assert (after[0] - before[0], after[1] - before[1]) == (1.0, 1.0)


def test_the_synced_heap_is_frozen_and_later_objects_are_still_collected() -> None:
    synced = [{"node": [1]}]
    try:
        frozen = gc_pauses.freeze_synced_heap()
        later = [{"pod": [2]}]
        walked = gc.get_objects()  # what a collection walks
        assert frozen == gc.get_freeze_count() > 0
        assert not any(o is synced for o in walked)
        assert any(o is later for o in walked)
    finally:
        gc.unfreeze()
