"""An asynchronous recorder of events.k8s.io/v1 Events, following client-go's events library.

`eventf` only appends a small record (object references, not the objects, so a buffered event
never keeps a deleted pod alive) to a bounded buffer and returns: it never blocks and never
does I/O. When the buffer is full the event is dropped, counted and logged (at most once a
second). A few sender threads turn records into Events and post them, several writes in flight
at once as client-go's broadcaster (a goroutine per event): one write at a time falls behind a
busy scheduler (about 13 events/s against 150 pods/s bound while the API server is
saturated), deferring the writes past the moment they describe and dropping
them once the buffer fills. Events are started in the order they were recorded, not
necessarily written in it.

Isomorphic events (same regarding/related object, type, reason, action, reporter) become an
EventSeries, as client-go does: the first is created, the second patches the stored event with
`series.count = 2`, later ones only count up in memory; series are written back every 30 minutes
and finished (written a last time and forgotten) 6 minutes after their last occurrence, checked
every minute (client-go checks every 6 minutes: 6 to 12). Events seen once are kept for that
time too, but no more than MAX_SINGLE_EVENTS of them (the oldest forgotten first, as client-go's
record correlator keeps 4096 in an LRU): every bound pod leaves one (its Scheduled Event, which
never repeats), so a time bound alone held 6 to 12 minutes of bindings, about 1 KB each.
A transport failure is retried (up to 12 tries, ~10 s apart, without holding up other events);
an error status from the server is logged and the event abandoned, like client-go.
"""

from __future__ import annotations

import heapq
import itertools
import re
import socket
import threading
import time
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from scheduler import metrics
from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.api.gang import Gang
from scheduler.api.json_types import Json
from scheduler.api.objects import Node, Pod
from scheduler.client.api import KubeApi
from scheduler.client.backoff import jittered
from scheduler.clock import Clock, RealClock

log = structlog.get_logger(__name__)


NORMAL = "Normal"
WARNING = "Warning"

REPORTING_CONTROLLER = "kube-pysched"
NOTE_LENGTH_LIMIT = 1024  # bytes, as the API validates events
FIELD_LENGTH_LIMIT = 128  # reportingInstance, action, reason
# A 5000-node PreemptionBasic storm (20 000 victims) queued more than 10 000 Events behind the
# saturated API server; a record is about 0.4 KB.
DEFAULT_BUFFER = 50000
# Writes in flight; give the recorder's RestClient as many connections. The scheduler process gives
# it one per binding worker (scheduler/cmd/app.py), 64 by default: every bound pod writes a
# Scheduled Event, and with 16 writers a 5000-node drain left 6 000 of 10 000 Events to be written
# after its pods were bound. kube-scheduler writes each Event in a
# goroutine of its own.
DEFAULT_SENDERS = 64
MAX_TRIES = 12
RETRY_INTERVAL = 10.0
FINISH_TIME = 6 * 60.0
FINISH_CHECK = 60.0  # how often series (and single events) are checked for FINISH_TIME
# Single events kept for a possible repeat (client-go's maxLruCacheEntries); at about 1 KB each
# (the key's object references, the name, the note), 4 MB at most.
MAX_SINGLE_EVENTS = 4096
REFRESH_TIME = 30 * 60.0
_DROP_LOG_INTERVAL = 1.0

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A corev1.ObjectReference; part of the key that makes events isomorphic."""

    kind: str
    namespace: str
    name: str
    uid: str = ""
    api_version: str = "v1"
    resource_version: str = ""

    @classmethod
    def of(cls, obj: Pod | Node | Gang | ObjectRef) -> ObjectRef:
        if isinstance(obj, ObjectRef):
            return obj
        if isinstance(obj, Pod):
            return cls("Pod", obj.namespace, obj.name, obj.uid, "v1", obj.resource_version)
        if isinstance(obj, Gang):  # a PodGroup of either API (its group/version)
            return cls(
                "PodGroup", obj.namespace, obj.name, obj.uid, obj.source.value, obj.resource_version
            )
        return cls("Node", "", obj.name, obj.uid, "v1", obj.resource_version)

    def to_json(self) -> Json:
        """In ObjectReference field order, empty fields omitted."""
        ref: Json = {"kind": self.kind}
        if self.namespace:
            ref["namespace"] = self.namespace
        ref["name"] = self.name
        if self.uid:
            ref["uid"] = self.uid
        if self.api_version:
            ref["apiVersion"] = self.api_version
        if self.resource_version:
            ref["resourceVersion"] = self.resource_version
        return ref


def micro_time(ts: float) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def truncate_note(note: str) -> str:
    """At most NOTE_LENGTH_LIMIT bytes of UTF-8, ending in " ..." when cut."""
    if len(note) <= NOTE_LENGTH_LIMIT // 4:
        return note
    encoded = note.encode()
    if len(encoded) <= NOTE_LENGTH_LIMIT:
        return note
    suffix = " ..."
    return encoded[: NOTE_LENGTH_LIMIT - len(suffix)].decode("utf-8", "ignore") + suffix


def event_name(regarding_name: str, unix_nanos: int) -> str:
    """util.GenerateEventName: "<name>.<hex nanos>", or a random name if that is invalid."""
    name = f"{regarding_name}.{unix_nanos:x}"
    if len(name) <= 253 and _DNS_SUBDOMAIN.fullmatch(name):
        return name
    return str(uuid.uuid4())


# The isomorphism key: (type, action, reason, regarding, related).
EventKey = tuple[str, str, str, ObjectRef, ObjectRef | None]


class _Entry:
    """A recorded event, kept while it may still become or be part of a series."""

    __slots__ = ("count", "event_time", "last_observed", "name", "namespace", "note")

    def __init__(self, name: str, namespace: str, event_time: float, note: str) -> None:
        self.name = name
        self.namespace = namespace
        self.event_time = event_time
        self.note = note
        self.count = 0  # 0: not (yet) a series
        self.last_observed = event_time


class _Send:
    """One write to the API: create the event, or patch its series."""

    __slots__ = ("count", "entry", "key", "last_observed", "patch", "tries")

    def __init__(self, key: EventKey, entry: _Entry, patch: bool) -> None:
        self.key = key
        self.entry = entry
        self.patch = patch
        # The series as it was when this write was decided.
        self.count = entry.count
        self.last_observed = entry.last_observed
        self.tries = 0


_Record = tuple[float, ObjectRef, ObjectRef | None, str, str, str, str]


class EventRecorder:
    """Implements framework.interface.EventRecorder; `start()` before use, `stop()` at exit.

    Give it a KubeApi whose RestClient is not the scheduler's own (kube-scheduler uses a
    separate client for events), so event traffic has its own rate limit, with a connection
    per sender.
    """

    def __init__(
        self,
        api: KubeApi,
        *,
        reporting_controller: str = REPORTING_CONTROLLER,
        reporting_instance: str | None = None,
        buffer_size: int = DEFAULT_BUFFER,
        clock: Clock | None = None,
        retry_interval: float = RETRY_INTERVAL,
        max_tries: int = MAX_TRIES,
        senders: int = DEFAULT_SENDERS,
        max_single_events: int = MAX_SINGLE_EVENTS,
    ) -> None:
        if senders < 1:
            raise ValueError(f"an event recorder needs at least one sender, not {senders}")
        self.api = api
        self.reporting_controller = reporting_controller
        instance = reporting_instance or f"{reporting_controller}-{socket.gethostname()}"
        self.reporting_instance = instance[:FIELD_LENGTH_LIMIT]
        self.buffer_size = buffer_size
        self._clock = clock or RealClock()
        self._retry_interval = retry_interval
        self._max_tries = max_tries
        self._senders = senders
        lock = threading.Lock()
        self._work = threading.Condition(lock)  # senders wait here for records or due writes
        self._idle = threading.Condition(lock)  # flush waits here for nothing left to write
        self._queue: deque[_Record] = deque()
        self._retries: list[tuple[float, int, _Send]] = []
        self._seq = itertools.count()
        self._in_flight = 0
        self._closing = False
        # Set once stop() begins: a write that fails is then dropped at once, without a line of
        # its own; all that was not sent is reported in one line (`unsent_at_stop`).
        self._stopping = False
        self.unsent_at_stop = 0
        self._unsent_reported = False
        self._threads: list[threading.Thread] = []
        # The series cache, the last event name's nanos and the maintenance times.
        self._cache_lock = threading.Lock()
        self._cache: dict[EventKey, _Entry] = {}
        # The cache's keys seen only once, oldest first: at most max_single_events.
        self._singles: OrderedDict[EventKey, None] = OrderedDict()
        self._max_singles = max(1, max_single_events)
        self._last_nanos = 0
        self._next_finish = 0.0
        self._next_refresh = 0.0
        self._last_drop_log = 0.0
        self.dropped = 0
        self.sent = 0
        self.failed = 0

    @property
    def senders(self) -> int:
        """How many writes this recorder keeps in flight at most."""
        return self._senders

    @property
    def cached(self) -> tuple[int, int]:
        """Events kept for a possible repeat: (single events, series)."""
        with self._cache_lock:
            singles = len(self._singles)
            return singles, len(self._cache) - singles

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        if self._threads:
            return
        now = self._clock.monotonic()
        self._next_finish = now + FINISH_CHECK
        self._next_refresh = now + REFRESH_TIME
        self._threads = [
            threading.Thread(target=self._run, name=f"event-recorder-{i}", daemon=True)
            for i in range(self._senders)
        ]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Posts what is buffered within `timeout` in all, then ends the senders. A write that
        fails meanwhile is not retried; what is left unsent is dropped with one log line."""
        deadline = time.monotonic() + timeout
        self.begin_stop()
        self.flush(timeout)
        with self._work:
            self._closing = True
            self._work.notify_all()
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.report_unsent()

    def begin_stop(self) -> None:
        """From now on a write that fails is dropped, not retried, and logs no line of its own
        (the process is stopping: stop() reports all that was not sent in one line)."""
        with self._work:
            self._stopping = True
            self._work.notify_all()  # due retries are dropped by the senders now

    def report_unsent(self) -> int:
        """Counts what stop() could not send (left in the buffer, retries, writes still
        waiting on the API server) and logs it once; returns the count."""
        with self._work:
            if self._unsent_reported:
                return self.unsent_at_stop
            self._unsent_reported = True
            self.unsent_at_stop += len(self._queue) + len(self._retries) + self._in_flight
            self._queue.clear()
            self._retries.clear()
            unsent = self.unsent_at_stop
        if unsent:
            log.warning(
                "dropping unsent events at shutdown",
                count=unsent,
                sent=self.sent,
                failed=self.failed,
            )
        return unsent

    def flush(self, timeout: float) -> bool:
        """Waits until every recorded event was written or abandoned; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._queue or self._in_flight or self._retries:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._threads:
                    return False
                self._idle.wait(remaining)
            return True

    # --- recording (any thread) -------------------------------------------------------------

    def eventf(
        self,
        regarding: Pod | Node | ObjectRef,
        related: Pod | Node | Gang | ObjectRef | None,
        event_type: str,
        reason: str,
        action: str,
        message: str,
    ) -> None:
        """Records an event; returns at once. Unknown types are refused as client-go does."""
        if event_type not in (NORMAL, WARNING):
            log.error("unsupported event type", event_type=event_type, reason=reason)
            return
        record: _Record = (
            self._clock.now(),
            ObjectRef.of(regarding),
            ObjectRef.of(related) if related is not None else None,
            event_type,
            reason,
            action,
            message,
        )
        with self._work:
            if self._closing:
                self.unsent_at_stop += 1  # in the one line report_unsent writes
                return
            if len(self._queue) >= self.buffer_size:
                self._drop(record, "buffer full")
                return
            self._queue.append(record)
            self._work.notify()

    def _drop(self, record: _Record, why: str) -> None:
        self.dropped += 1
        metrics.events_dropped.inc()
        now = time.monotonic()
        if now - self._last_drop_log >= _DROP_LOG_INTERVAL:
            self._last_drop_log = now
            log.warning(
                "dropping events",
                why=why,
                dropped_total=self.dropped,
                reason=record[4],
                regarding=record[1].name,
            )

    # --- worker -----------------------------------------------------------------------------

    def _run(self) -> None:
        """A sender: one record at a time, then any retries and series writes that are due."""
        while True:
            with self._work:
                while not self._queue and not self._closing:
                    wait = self._next_wait()
                    if wait <= 0:
                        break
                    self._work.wait(wait)
                if self._closing and not self._queue:
                    self.unsent_at_stop += len(self._retries)
                    self._retries.clear()
                    self._idle.notify_all()
                    return
                if self._stopping and self._retries:
                    self.unsent_at_stop += len(self._retries)
                    self._retries.clear()
                record = self._queue.popleft() if self._queue else None
                self._in_flight += 1
            try:
                if record is not None:
                    send = self._decide(record)
                    if send is not None:
                        self._send(send)
                self._send_due_retries()
                for send in self._due_series_writes():
                    self._send(send)
            except Exception:
                log.exception("event recorder failed")
            finally:
                with self._work:
                    self._in_flight -= 1
                    if not self._queue and not self._in_flight:
                        self._idle.notify_all()

    def _next_wait(self) -> float:
        """Seconds until the next retry or series maintenance is due."""
        wait = min(self._next_finish, self._next_refresh) - self._clock.monotonic()
        if self._retries:
            wait = min(wait, self._retries[0][0] - time.monotonic())
        return wait

    def _decide(self, record: _Record) -> _Send | None:
        """The write a record calls for: a new Event, the patch that makes it a series, or
        none (a series counting up in memory)."""
        when, regarding_ref, related_ref, event_type, reason, action, message = record
        key: EventKey = (event_type, action, reason, regarding_ref, related_ref)
        with self._cache_lock:
            entry = self._cache.get(key)
            if entry is not None:
                entry.last_observed = when
                if entry.count:
                    entry.count += 1
                    return None
                entry.count = 2
                del self._singles[key]
                return _Send(key, entry, patch=True)
            nanos = max(int(when * 1e9), self._last_nanos + 1)
            self._last_nanos = nanos
            entry = _Entry(
                event_name(regarding_ref.name, nanos),
                regarding_ref.namespace or "default",
                when,
                truncate_note(message),
            )
            self._cache[key] = entry
            self._singles[key] = None
            if len(self._singles) > self._max_singles:
                oldest, _ = self._singles.popitem(last=False)
                del self._cache[oldest]
            return _Send(key, entry, patch=False)

    def _body(self, send: _Send) -> Json:
        event_type, action, reason, regarding, related = send.key
        entry = send.entry
        body: Json = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": entry.name, "namespace": entry.namespace},
            "eventTime": micro_time(entry.event_time),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action[:FIELD_LENGTH_LIMIT],
            "reason": reason[:FIELD_LENGTH_LIMIT],
            "regarding": regarding.to_json(),
            "note": entry.note,
            "type": event_type,
        }
        if related is not None:
            body["related"] = related.to_json()
        if send.count:
            body["series"] = self._series(send)
        return body

    @staticmethod
    def _series(send: _Send) -> Json:
        return {"count": send.count, "lastObservedTime": micro_time(send.last_observed)}

    def _send(self, send: _Send) -> bool:
        """One attempt; schedules a retry on a transport failure. True if nothing is left."""
        send.tries += 1
        entry = send.entry
        try:
            if send.patch:
                try:
                    self.api.patch_event(
                        entry.namespace, entry.name, {"series": self._series(send)}
                    )
                    self._tally(sent=1)
                    return True
                except ApiError as err:
                    if not err.not_found:
                        raise
            self.api.create_event(entry.namespace, self._body(send))
            self._tally(sent=1)
            return True
        except ApiError as err:
            if err.already_exists and send.patch:
                # The Event this series patches was created between the patch's 404 and this
                # create: the patch will find it. client-go retries this without a log line.
                return self._retry_later(send, err, quiet=True)
            if err.already_exists:
                # Its series' patch, sent at the same time, found no Event and created it
                # first: the series stands for this one (client-go drops it too).
                log.debug("event already written as a series", name=entry.name)
                return True
            self._tally(failed=1)
            # Nothing for an operator to do about an Event whose namespace is being (or has
            # been) deleted: client-go's record broadcaster logs that at V(5).
            report = log.debug if err.namespace_terminating else log.error
            report(
                "server rejected event (will not retry)",
                name=entry.name,
                namespace=entry.namespace,
                reason=send.key[2],
                error=str(err),
            )
            return True
        except ApiConnectionError as err:
            return self._retry_later(send, err)

    def _tally(self, sent: int = 0, failed: int = 0) -> None:
        # Sixteen senders count here: `+=` on an attribute is not atomic across threads.
        with self._cache_lock:
            self.sent += sent
            self.failed += failed

    def _retry_later(self, send: _Send, err: Exception, *, quiet: bool = False) -> bool:
        if self._stopping:
            with self._work:
                self.unsent_at_stop += 1
            return True
        if send.tries >= self._max_tries:
            self._tally(failed=1)
            log.error("unable to write event (retry limit exceeded)", name=send.entry.name)
            return True
        # client-go's events broadcaster logs each failed write it will retry as an error.
        report = log.debug if quiet else log.error
        report("unable to write event (will retry)", name=send.entry.name, error=str(err))
        due = time.monotonic() + jittered(self._retry_interval, 0.25)
        with self._work:
            heapq.heappush(self._retries, (due, next(self._seq), send))
        return False

    def _send_due_retries(self) -> None:
        now = time.monotonic()
        while True:
            with self._work:
                if not self._retries or self._retries[0][0] > now:
                    return
                _, _, send = heapq.heappop(self._retries)
            self._send(send)

    def _due_series_writes(self) -> list[_Send]:
        """The series writes due now: every series refreshed each REFRESH_TIME, and series
        (and single events) unseen for FINISH_TIME finished and forgotten (checked every
        FINISH_CHECK)."""
        now_mono = self._clock.monotonic()
        if now_mono < self._next_refresh and now_mono < self._next_finish:
            return []
        sends: list[_Send] = []
        with self._cache_lock:
            if now_mono >= self._next_refresh:
                self._next_refresh = now_mono + REFRESH_TIME
                sends += [
                    _Send(key, entry, patch=True)
                    for key, entry in self._cache.items()
                    if entry.count
                ]
            if now_mono >= self._next_finish:
                self._next_finish = now_mono + FINISH_CHECK
                cutoff = self._clock.now() - FINISH_TIME
                for key, entry in list(self._cache.items()):
                    if entry.count:
                        if entry.last_observed < cutoff:
                            sends.append(_Send(key, entry, patch=True))
                            del self._cache[key]
                    elif entry.event_time < cutoff:
                        del self._cache[key]
                        del self._singles[key]
        return sends
