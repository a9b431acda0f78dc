"""Lease-based leader election, as client-go's leaderelection package with a LeaseLock.

A candidate tries every `retry_period` (jittered) to take the coordination.k8s.io/v1 Lease: it
may when the lease names no holder or has not been renewed for `lease_duration`, measured on our
own clock from when we last saw the lease change (so clock skew between candidates does not
matter). The leader renews every `retry_period`; if it cannot renew within `renew_deadline` it
stops leading. On `stop()` a leader releases the lease (holder cleared, duration 1 s), so a
successor takes over at once instead of after `lease_duration`.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from scheduler import metrics
from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.api.json_types import Json
from scheduler.client.backoff import jittered
from scheduler.client.events import ObjectRef, micro_time
from scheduler.clock import Clock, RealClock
from scheduler.logging import v_enabled

log = structlog.get_logger(__name__)


JITTER_FACTOR = 1.2
#: kube-scheduler's leader-election health check timeout (HealthzAdaptor(20 s)).
HEALTH_TOLERANCE = 20.0


class LeaseEventRecorder(Protocol):
    def eventf(
        self,
        regarding: ObjectRef,
        related: ObjectRef | None,
        event_type: str,
        reason: str,
        action: str,
        message: str,
    ) -> None: ...


class LeaseClient(Protocol):
    """The lease calls of scheduler.client.api.KubeApi."""

    def get_lease(self, namespace: str, name: str, *, within: float | None = None) -> Json: ...

    def create_lease(self, namespace: str, lease: Json, *, within: float | None = None) -> Json: ...

    def update_lease(self, namespace: str, lease: Json, *, within: float | None = None) -> Json: ...


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """KubeSchedulerConfiguration.leaderElection; durations in seconds."""

    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def validate(self) -> None:
        """The constraints client-go's NewLeaderElector enforces."""
        if not self.identity:
            raise ValueError("leader election identity must not be empty")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"renewDeadline must be greater than retryPeriod*{JITTER_FACTOR}")
        if self.lease_duration < 1:
            raise ValueError("leaseDuration must be at least 1s (the Lease stores whole seconds)")
        if self.retry_period <= 0:
            raise ValueError("retryPeriod must be greater than zero")


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """The part of a Lease's spec that election reads and writes."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    leader_transitions: int = 0
    preferred_holder: str = ""
    strategy: str = ""

    @classmethod
    def from_lease(cls, lease: Json) -> LeaderElectionRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime") or "",
            renew_time=spec.get("renewTime") or "",
            leader_transitions=int(spec.get("leaseTransitions") or 0),
            preferred_holder=spec.get("preferredHolder") or "",
            strategy=spec.get("strategy") or "",
        )

    def to_spec(self) -> Json:
        spec: Json = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }
        if self.preferred_holder:
            spec["preferredHolder"] = self.preferred_holder
        if self.strategy:
            spec["strategy"] = self.strategy
        return spec


def _call(callback: Callable[..., None] | None, *args: Any) -> None:
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:
        log.exception("leader election callback failed")


class LeaderElector:
    """Runs the election on its own thread (`start`) or the caller's (`run`).

    `on_started_leading` runs on a thread of its own (it may block, e.g. run the scheduler);
    `fence` runs on the elector's thread the moment leading ends (a renewal missed its
    deadline, or `stop()`), before the lease is released: whatever it stops can no longer act
    as the leader while the release, which may itself wait up to `renew_deadline` on a
    partitioned API server, is still going on. `on_stopped_leading` runs on the elector's thread
    when `run` ends - after losing the lease, after `stop()`, or (as in client-go) even if
    leadership was never acquired. With an
    `event_recorder`, "became leader" / "stopped leading" events are recorded on the Lease, as
    client-go's LeaseLock does.
    """

    def __init__(
        self,
        api: LeaseClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        on_new_leader: Callable[[str], None] | None = None,
        fence: Callable[[], None] | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        event_recorder: LeaseEventRecorder | None = None,
    ) -> None:
        config.validate()
        self.event_recorder = event_recorder
        self.api = api
        self.config = config
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.fence = fence
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._lease: Json | None = None
        self._observed = LeaderElectionRecord()
        self._observed_time = 0.0
        self._reported_leader = ""
        self._thread: threading.Thread | None = None
        self._leading_thread: threading.Thread | None = None
        self._status = metrics.leader_election_master_status.labels(config.name)
        self._status.set(0)

    @property
    def describe(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"

    # --- state ------------------------------------------------------------------------------

    def is_leader(self) -> bool:
        with self._lock:
            return self._observed.holder_identity == self.config.identity

    def healthy(self, tolerance: float = HEALTH_TOLERANCE) -> bool:
        """client-go's HealthzAdaptor: failing only while we believe we lead but have not
        renewed for longer than the lease plus `tolerance` (a stuck elector)."""
        with self._lock:
            if self._observed.holder_identity != self.config.identity:
                return True
            renewed = self._observed_time
        return self._clock.monotonic() <= renewed + self.config.lease_duration + tolerance

    def leader(self) -> str:
        """The holder we last observed ("" if none)."""
        with self._lock:
            return self._observed.holder_identity

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        with self._lock:
            self._observed = record
            self._observed_time = self._clock.monotonic()

    def _lease_valid(self) -> bool:
        with self._lock:
            expiry = self._observed_time + self._observed.lease_duration_seconds
        return expiry > self._clock.monotonic()

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self.run, name="leader-elector", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 15.0) -> None:
        """Ends the election, releasing the lease if we hold it; waits for the thread."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        try:
            if not self._acquire():
                return
            self._status.set(1)
            self._record_event("became leader")
            self._leading_thread = threading.Thread(
                target=_call, args=(self.on_started_leading,), name="leading", daemon=True
            )
            self._leading_thread.start()
            try:
                self._renew()
            finally:
                self._status.set(0)
                _call(self.fence)
                self._record_event("stopped leading")
            if self.config.release_on_cancel:
                self._release()
        finally:
            _call(self.on_stopped_leading)

    def _acquire(self) -> bool:
        log.info("attempting to acquire leader lease", lock=self.describe)
        while not self._stopped.is_set():
            acquired = self.try_acquire_or_renew(
                self._clock.monotonic() + self.config.renew_deadline
            )
            self._maybe_report_transition()
            if acquired:
                log.info("successfully acquired lease", lock=self.describe)
                return True
            if self._stopped.wait(jittered(self.config.retry_period, JITTER_FACTOR, self._rng)):
                break
        return False

    def _renew(self) -> None:
        """Renews until a renewal misses its deadline or `stop()`."""
        cfg = self.config
        while not self._stopped.is_set():
            deadline = self._clock.monotonic() + cfg.renew_deadline
            renewed = False
            while not self._stopped.is_set():
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    break
                if self.try_acquire_or_renew(deadline):
                    renewed = True
                    break
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0 or self._stopped.wait(min(cfg.retry_period, remaining)):
                    break
            self._maybe_report_transition()
            if self._stopped.is_set():
                return
            if not renewed:
                log.info("failed to renew lease", lock=self.describe)
                return
            self._stopped.wait(cfg.retry_period)

    # --- one round --------------------------------------------------------------------------

    def _new_record(self, now: str) -> LeaderElectionRecord:
        return LeaderElectionRecord(
            holder_identity=self.config.identity,
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time=now,
            renew_time=now,
        )

    def _left(self, deadline: float) -> float:
        """What is left until `deadline` for one API call (a call is never given nothing)."""
        return max(0.001, deadline - self._clock.monotonic())

    def _update(self, record: LeaderElectionRecord, deadline: float) -> None:
        if self._lease is None:
            raise RuntimeError("lease not initialized, get or create it first")
        lease = dict(self._lease)
        lease["spec"] = record.to_spec()
        self._lease = self.api.update_lease(
            self.config.namespace, lease, within=self._left(deadline)
        )

    def try_acquire_or_renew(self, deadline: float) -> bool:
        """One attempt to become or stay the holder, over by `deadline` (our clock's
        monotonic time) whatever the API server does; True if we hold the lease now."""
        cfg = self.config
        now = micro_time(self._clock.now())
        record = self._new_record(now)

        if self.is_leader() and self._lease_valid():
            # Fast path: update the lease we last wrote, without reading it first.
            with self._lock:
                observed = self._observed
            record = _with_history(record, observed)
            try:
                self._update(record, deadline)
                self._set_observed(record)
                return True
            except (ApiError, ApiConnectionError) as err:
                if v_enabled(2):
                    log.info(
                        "failed to update lease optimistically", lock=self.describe, error=str(err)
                    )

        try:
            lease = self.api.get_lease(cfg.namespace, cfg.name, within=self._left(deadline))
        except ApiError as err:
            if not err.not_found:
                log.error("error retrieving lease lock", lock=self.describe, error=str(err))
                return False
            try:
                body: Json = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                    "spec": record.to_spec(),
                }
                self._lease = self.api.create_lease(
                    cfg.namespace, body, within=self._left(deadline)
                )
            except (ApiError, ApiConnectionError) as create_err:
                log.error("error creating lease lock", lock=self.describe, error=str(create_err))
                return False
            self._set_observed(record)
            return True
        except ApiConnectionError as err:
            log.error("error retrieving lease lock", lock=self.describe, error=str(err))
            return False

        self._lease = lease
        old = LeaderElectionRecord.from_lease(lease)
        with self._lock:
            changed = old != self._observed
        if changed:
            self._set_observed(old)
        if old.holder_identity and self._lease_valid() and not self.is_leader():
            log.debug("lease is held and has not yet expired", holder=old.holder_identity)
            return False

        if self.is_leader():
            record = _with_history(record, old)
        else:
            record = _with_history(record, old, transition=True)
        try:
            self._update(record, deadline)
        except (ApiError, ApiConnectionError) as err:
            log.error("failed to update lease", lock=self.describe, error=str(err))
            return False
        self._set_observed(record)
        return True

    def _release(self, attempts: int = 5) -> bool:
        cfg = self.config
        deadline = self._clock.monotonic() + cfg.renew_deadline
        try:
            lease = self.api.get_lease(cfg.namespace, cfg.name, within=self._left(deadline))
        except (ApiError, ApiConnectionError) as err:
            log.error("error retrieving lease lock for release", lock=self.describe, error=str(err))
            return False
        if not self.is_leader():
            return True
        self._lease = lease
        old = LeaderElectionRecord.from_lease(lease)
        now = micro_time(self._clock.now())
        record = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            leader_transitions=old.leader_transitions,
        )
        try:
            self._update(record, deadline)
        except ApiError as err:
            if err.conflict and attempts > 1:
                return self._release(attempts - 1)
            log.error("failed to release lease", lock=self.describe, error=str(err))
            return False
        except ApiConnectionError as err:
            log.error("failed to release lease", lock=self.describe, error=str(err))
            return False
        self._set_observed(record)
        log.info("released leader lease", lock=self.describe)
        return True

    def _record_event(self, what: str) -> None:
        if self.event_recorder is None:
            return
        meta = (self._lease or {}).get("metadata") or {}
        subject = ObjectRef(
            "Lease",
            self.config.namespace,
            self.config.name,
            meta.get("uid", ""),
            "coordination.k8s.io/v1",
            meta.get("resourceVersion", ""),
        )
        self.event_recorder.eventf(
            subject,
            None,
            "Normal",
            "LeaderElection",
            "LeaderElection",
            f"{self.config.identity} {what}",
        )

    def _maybe_report_transition(self) -> None:
        holder = self.leader()
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        _call(self.on_new_leader, holder)


def _with_history(
    record: LeaderElectionRecord, old: LeaderElectionRecord, transition: bool = False
) -> LeaderElectionRecord:
    """`record` keeping the acquire time and transition count (or counting one more)."""
    if transition:
        return LeaderElectionRecord(
            holder_identity=record.holder_identity,
            lease_duration_seconds=record.lease_duration_seconds,
            acquire_time=record.acquire_time,
            renew_time=record.renew_time,
            leader_transitions=old.leader_transitions + 1,
        )
    return LeaderElectionRecord(
        holder_identity=record.holder_identity,
        lease_duration_seconds=record.lease_duration_seconds,
        acquire_time=old.acquire_time,
        renew_time=record.renew_time,
        leader_transitions=old.leader_transitions,
    )
