"""The token bucket against client-go's semantics, on a fake clock."""

from __future__ import annotations

import pytest

from scheduler.client.ratelimit import TokenBucket
from scheduler.clock import FakeClock


def test_burst_is_available_at_once_then_tokens_come_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)

    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    # Waiting callers are lined up 1/qps apart.
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)


def test_tokens_refill_with_time_up_to_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=2, clock=clock)
    bucket.reserve()
    bucket.reserve()
    assert not bucket.try_accept()

    clock.step(0.1)
    assert bucket.try_accept()
    assert not bucket.try_accept()

    clock.step(60)  # a long idle period refills only up to burst
    assert bucket.try_accept()
    assert bucket.try_accept()
    assert not bucket.try_accept()


def test_reservations_in_debt_are_repaid_before_new_tokens() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=2, burst=1, clock=clock)
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(0.5)
    assert bucket.reserve() == pytest.approx(1.0)
    clock.step(1.0)
    # Two tokens arrived but both were promised already.
    assert bucket.reserve() == pytest.approx(0.5)


def test_wait_sleeps_for_the_reserved_delay() -> None:
    clock = FakeClock()
    slept: list[float] = []
    bucket = TokenBucket(qps=4, burst=1, clock=clock, sleep=slept.append)
    assert bucket.wait() == 0.0
    assert bucket.wait() == pytest.approx(0.25)
    assert slept == [pytest.approx(0.25)]


def test_non_positive_qps_is_rejected() -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps=0, burst=1)
