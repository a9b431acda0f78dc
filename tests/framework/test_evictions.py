"""The evictions memory: what preemption asked to go, until the informer has caught up."""

from __future__ import annotations

from scheduler.framework.evictions import EVICTED_MEMORY_SECONDS, EVICTED_MEMORY_SIZE, Evictions


def test_the_memory_drops_only_expired_evictions_once_over_its_size() -> None:
    evictions = Evictions()
    clock = [0.0]
    evictions.monotonic = lambda: clock[0]
    old = [f"old-{i}" for i in range(EVICTED_MEMORY_SIZE)]
    for uid in old:
        evictions.remember(uid)
    clock[0] = EVICTED_MEMORY_SECONDS / 2
    evictions.remember(old[0])  # evicted again: remembered from now on
    evictions.remember("recent")  # over the size, nothing expired yet: all kept
    assert all(evictions.requested(uid) for uid in [*old, "recent"])
    clock[0] = EVICTED_MEMORY_SECONDS + 1
    evictions.remember("newest")
    assert evictions.requested(old[0])
    assert evictions.requested("recent")
    assert evictions.requested("newest")
    assert not any(evictions.requested(uid) for uid in old[1:])
    assert not evictions.requested("never")


def test_a_claimed_pod_is_claimed_once_until_released_or_evicted() -> None:
    evictions = Evictions()
    assert evictions.claim(["a", "b"]) == {"a", "b"}
    assert evictions.requested("a") and evictions.requested("b")
    # Another preemption choosing the same pods gets only the ones nobody claimed.
    assert evictions.claim(["a", "b", "c"]) == {"c"}
    evictions.remember("a")  # evicted: remembered after its claim ends
    evictions.release(["a", "b", "c"])
    assert evictions.requested("a")
    # b and c were never evicted (the calls failed): free to be chosen again.
    assert not evictions.requested("b") and not evictions.requested("c")
    assert evictions.claim(["a", "b"]) == {"b"}
