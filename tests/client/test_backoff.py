"""Backoff sequences (wait.Backoff) and retry.OnError."""

from __future__ import annotations

import random

import pytest

from scheduler.api.errors import ApiConnectionError, ApiError, is_retriable
from scheduler.client.backoff import Backoff, jittered, retry_on_error
from scheduler.clock import FakeClock


def test_reflector_backoff_doubles_from_800ms_to_a_30s_cap() -> None:
    backoff = Backoff.for_reflector(clock=FakeClock())
    backoff.jitter = 0.0
    delays = [backoff.step() for _ in range(9)]
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0])


def test_jitter_adds_up_to_factor_times_the_duration() -> None:
    backoff = Backoff(1.0, factor=2.0, jitter=1.0, cap=8.0, steps=10, rng=random.Random(7))
    for base in (1.0, 2.0, 4.0, 8.0, 8.0):
        delay = backoff.step()
        assert base <= delay <= 2 * base


def test_backoff_starts_over_after_the_reset_interval() -> None:
    clock = FakeClock()
    backoff = Backoff(1.0, factor=2.0, steps=10, cap=30.0, reset_after=120.0, clock=clock)
    assert [backoff.step() for _ in range(3)] == [1.0, 2.0, 4.0]
    clock.step(121)
    assert backoff.step() == 1.0
    assert backoff.step() == 2.0


def test_jittered_stays_within_bounds() -> None:
    rng = random.Random(1)
    values = [jittered(10.0, 0.25, rng) for _ in range(100)]
    assert all(10.0 <= v <= 12.5 for v in values)
    assert len(set(values)) > 1


def test_retry_on_error_retries_retriable_errors_with_default_backoff() -> None:
    calls: list[int] = []
    slept: list[float] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ApiError(500, "InternalError", "etcd hiccup")
        return "ok"

    assert retry_on_error(flaky, is_retriable, sleep=slept.append, jitter=0.0) == "ok"
    assert len(calls) == 3
    assert slept == pytest.approx([0.01, 0.05])


def test_retry_on_error_gives_up_after_steps_and_reraises_the_last_error() -> None:
    calls: list[int] = []

    def refused() -> None:
        calls.append(1)
        raise ApiConnectionError("refused", refused=True, request_sent=False)

    with pytest.raises(ApiConnectionError):
        retry_on_error(refused, is_retriable, sleep=lambda _: None)
    assert len(calls) == 4


def test_retry_on_error_does_not_retry_other_errors() -> None:
    calls: list[int] = []

    def conflict() -> None:
        calls.append(1)
        raise ApiError(409, "Conflict", "the object has been modified")

    with pytest.raises(ApiError):
        retry_on_error(conflict, is_retriable, sleep=lambda _: None)
    assert len(calls) == 1
