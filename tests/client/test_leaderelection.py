"""Leader election rounds against an in-memory Lease API with optimistic concurrency."""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

import pytest

from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.client.leaderelection import LeaderElectionConfig, LeaderElector
from scheduler.clock import FakeClock


class FakeLeases:
    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.rv = 0
        self.down = False
        self.lock = threading.Lock()

    def _check(self) -> None:
        if self.down:
            raise ApiConnectionError("refused", refused=True, request_sent=False)

    def get_lease(self, namespace: str, name: str, *, within: float | None = None) -> Any:
        self._check()
        with self.lock:
            if (namespace, name) not in self.leases:
                raise ApiError(404, "NotFound", "leases not found")
            return copy.deepcopy(self.leases[(namespace, name)])

    def create_lease(self, namespace: str, lease: Any, *, within: float | None = None) -> Any:
        self._check()
        with self.lock:
            key = (namespace, lease["metadata"]["name"])
            if key in self.leases:
                raise ApiError(409, "AlreadyExists", "exists")
            self.rv += 1
            stored = copy.deepcopy(lease)
            stored["metadata"]["resourceVersion"] = str(self.rv)
            self.leases[key] = stored
            return copy.deepcopy(stored)

    def update_lease(self, namespace: str, lease: Any, *, within: float | None = None) -> Any:
        self._check()
        with self.lock:
            key = (namespace, lease["metadata"]["name"])
            current = self.leases[key]
            if lease["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "the object has been modified")
            self.rv += 1
            stored = copy.deepcopy(lease)
            stored["metadata"]["resourceVersion"] = str(self.rv)
            self.leases[key] = stored
            return copy.deepcopy(stored)

    def spec(self) -> dict[str, Any]:
        result: dict[str, Any] = self.leases[("kube-system", "kube-pysched")]["spec"]
        return result


def elector(leases: FakeLeases, identity: str, clock: FakeClock, **callbacks: Any) -> LeaderElector:
    config = LeaderElectionConfig("kube-system", "kube-pysched", identity)
    return LeaderElector(
        leases,
        config,
        on_started_leading=callbacks.get("started", lambda: None),
        on_stopped_leading=callbacks.get("stopped", lambda: None),
        on_new_leader=callbacks.get("new_leader"),
        clock=clock,
    )


def test_first_candidate_creates_the_lease_and_a_second_one_waits() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)

    assert a.try_acquire_or_renew(clock.monotonic() + 5)
    assert a.is_leader()
    spec = leases.spec()
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"].endswith("Z") and len(spec["renewTime"]) == 27

    assert not b.try_acquire_or_renew(clock.monotonic() + 5)
    assert b.leader() == "a"
    assert not b.is_leader()


def test_leader_renews_without_reading_and_keeps_its_acquire_time() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a = elector(leases, "a", clock)
    assert a.try_acquire_or_renew(clock.monotonic() + 5)
    acquired = leases.spec()["acquireTime"]
    clock.step(2)
    assert a.try_acquire_or_renew(clock.monotonic() + 5)
    assert leases.spec()["acquireTime"] == acquired
    assert leases.spec()["renewTime"] != acquired


def test_an_expired_lease_is_taken_over_and_the_old_leader_notices() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert a.try_acquire_or_renew(clock.monotonic() + 5)
    assert not b.try_acquire_or_renew(clock.monotonic() + 5)  # b starts observing the record now

    clock.step(14)
    assert not b.try_acquire_or_renew(
        clock.monotonic() + 5
    )  # not yet lease_duration without change
    clock.step(2)
    assert b.try_acquire_or_renew(clock.monotonic() + 5)
    assert leases.spec()["holderIdentity"] == "b"
    assert leases.spec()["leaseTransitions"] == 1

    # a's optimistic update conflicts; it re-reads and sees b's fresh lease.
    assert not a.try_acquire_or_renew(clock.monotonic() + 5)
    assert not a.is_leader()
    assert a.leader() == "b"


def test_renewals_by_the_holder_keep_others_out() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert a.try_acquire_or_renew(clock.monotonic() + 5)
    for _ in range(20):
        clock.step(2)
        assert a.try_acquire_or_renew(clock.monotonic() + 5)
        assert not b.try_acquire_or_renew(clock.monotonic() + 5)


def test_release_lets_a_successor_in_at_once() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert a.try_acquire_or_renew(clock.monotonic() + 5)
    assert not b.try_acquire_or_renew(clock.monotonic() + 5)
    assert a._release()
    assert leases.spec()["holderIdentity"] == ""
    assert leases.spec()["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew(clock.monotonic() + 5)


def test_api_failures_mean_not_acquired() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a = elector(leases, "a", clock)
    leases.down = True
    assert not a.try_acquire_or_renew(clock.monotonic() + 5)
    leases.down = False
    assert a.try_acquire_or_renew(clock.monotonic() + 5)


def test_config_is_validated_like_client_go() -> None:
    with pytest.raises(ValueError, match="leaseDuration must be greater"):
        LeaderElectionConfig("ns", "n", "id", lease_duration=10, renew_deadline=10).validate()
    with pytest.raises(ValueError, match="renewDeadline must be greater"):
        LeaderElectionConfig("ns", "n", "id", renew_deadline=2, retry_period=2).validate()
    with pytest.raises(ValueError, match="identity"):
        LeaderElectionConfig("ns", "n", "").validate()


def test_run_leads_until_stopped_then_releases_and_calls_back() -> None:
    leases = FakeLeases()
    started, stopped = threading.Event(), threading.Event()
    leaders: list[str] = []
    events: list[tuple[Any, ...]] = []

    class Recorder:
        def eventf(self, regarding: Any, related: Any, *rest: str) -> None:
            events.append((regarding.kind, regarding.name, *rest))

    config = LeaderElectionConfig(
        "kube-system", "kube-pysched", "a", lease_duration=1, renew_deadline=0.5, retry_period=0.2
    )
    le = LeaderElector(
        leases,
        config,
        on_started_leading=started.set,
        on_stopped_leading=stopped.set,
        on_new_leader=leaders.append,
        event_recorder=Recorder(),
    )
    le.start()
    assert started.wait(5)
    assert le.is_leader()
    le.stop(timeout=5)
    assert stopped.is_set()
    assert leases.spec()["holderIdentity"] == ""
    assert leaders == ["a"]
    assert [e[-1] for e in events] == ["a became leader", "a stopped leading"]
    assert events[0][:5] == ("Lease", "kube-pysched", "Normal", "LeaderElection", "LeaderElection")


def test_run_stops_leading_when_renewal_fails_past_the_deadline() -> None:
    leases = FakeLeases()
    started, stopped = threading.Event(), threading.Event()
    config = LeaderElectionConfig(
        "kube-system", "kube-pysched", "a", lease_duration=1, renew_deadline=0.5, retry_period=0.2
    )
    le = LeaderElector(
        leases, config, on_started_leading=started.set, on_stopped_leading=stopped.set
    )
    le.start()
    assert started.wait(5)
    leases.down = True
    assert stopped.wait(10)
    le.stop(timeout=5)


class PartitionedLeases(FakeLeases):
    """Once `partitioned`, every call hangs for all the time it is given, then fails, as a
    request into a stopped proxy does; the order of calls and what each was given are kept."""

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.partitioned = False
        self.log = log
        self.given: list[float | None] = []

    def _check_call(self, what: str, within: float | None) -> None:
        self.log.append(what)
        self.given.append(within)
        if self.partitioned:
            assert within is not None, "a lease call without a bound can outlast the deadline"
            time.sleep(within)
            raise ApiConnectionError("timed out", refused=False, request_sent=True)

    def get_lease(self, namespace: str, name: str, *, within: float | None = None) -> Any:
        self._check_call("get", within)
        return super().get_lease(namespace, name, within=within)

    def update_lease(self, namespace: str, lease: Any, *, within: float | None = None) -> Any:
        self._check_call("update", within)
        return super().update_lease(namespace, lease, within=within)


def test_a_partitioned_leader_fences_itself_before_trying_to_release() -> None:
    """Every lease call is bounded by what is left of the renew deadline, and the fence (which
    stops all writes) comes as soon as renewing failed: before the release, which on a
    partitioned API server only waits out its own deadline."""
    log: list[str] = []
    leases = PartitionedLeases(log)
    started, stopped = threading.Event(), threading.Event()
    config = LeaderElectionConfig(
        "kube-system", "kube-pysched", "a", lease_duration=1.5, renew_deadline=0.6, retry_period=0.2
    )
    le = LeaderElector(
        leases,
        config,
        on_started_leading=started.set,
        on_stopped_leading=lambda: (log.append("stopped"), stopped.set()),
        fence=lambda: log.append("fence"),
    )
    le.start()
    assert started.wait(5)
    leases.partitioned = True
    assert stopped.wait(10)
    le.stop(timeout=5)
    assert log.count("fence") == 1
    after_fence = log[log.index("fence") + 1 :]
    assert after_fence == ["get", "stopped"]  # the release's read, then the callback
    assert all(w is not None and w <= config.renew_deadline for w in leases.given)


def test_health_fails_only_for_a_leader_that_stopped_renewing() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert a.healthy() and b.healthy()
    assert a.try_acquire_or_renew(clock.monotonic() + 5)
    assert not b.try_acquire_or_renew(clock.monotonic() + 5)
    clock.step(a.config.lease_duration + 20)
    assert a.healthy()  # exactly at lease duration + the 20 s tolerance
    clock.step(1)
    assert not a.healthy()  # believes it leads, has not renewed: stuck
    assert b.healthy()  # a follower is healthy however old the lease it saw
    assert a.try_acquire_or_renew(clock.monotonic() + 5)
    assert a.healthy()
