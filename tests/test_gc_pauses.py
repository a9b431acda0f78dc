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
