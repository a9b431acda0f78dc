"""List-then-watch of one resource collection, feeding a store, as client-go's Reflector.

The loop: list (paginated, at resourceVersion "0" the first time so the watch cache serves it),
hand the items to the store as a replacement, then watch from the list's resourceVersion,
passing every ADDED/MODIFIED/DELETED event on and remembering each event's resourceVersion
(BOOKMARKs only move it forward).

Recovery:
* a watch that ends or loses its connection is reopened at once from the last resourceVersion;
  if opening fails (refused, 429, 5xx, apiserver restarting) it is retried with the reflector
  backoff (800 ms doubling to 30 s, with jitter), still from the same resourceVersion;
* 410 Gone (the resourceVersion left the server's window), at watch start or as an ERROR event,
  means events were missed: relist, and the store turns the difference into events;
* any other failure ends the round; after a backoff delay the next round relists;
* an optional collection (a custom resource whose CRD may not be installed) that answers the
  list with 404 counts as served empty: the store is emptied and synced, an error is logged
  once, and the list is retried with the backoff until the API appears.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

import orjson
import structlog

from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.api.json_types import Json
from scheduler.client.backoff import Backoff
from scheduler.client.rest import Query, RestClient, StreamResponse
from scheduler.client.watch import ADDED, BOOKMARK, DELETED, ERROR, MODIFIED, LineSplitter
from scheduler.logging import v_enabled

log = structlog.get_logger(__name__)


DEFAULT_PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300.0  # watches last a random 5-10 minutes, as client-go's
WATCH_READ_SLACK = 30.0  # a read blocked this long past the server timeout means a dead peer
LIST_TIMEOUT = 60.0
VERY_SHORT_WATCH = 1.0


@dataclass(frozen=True, slots=True)
class ListWatchSpec:
    """A collection to list and watch: its path and optional selectors."""

    path: str  # e.g. "/api/v1/pods" or "/apis/policy/v1/poddisruptionbudgets"
    field_selector: str = ""
    label_selector: str = ""
    optional: bool = False
    """The server may not serve it (a CRD): a 404 on the list is a state, not a failure."""

    def query(self) -> dict[str, str | int | bool]:
        query: dict[str, str | int | bool] = {}
        if self.field_selector:
            query["fieldSelector"] = self.field_selector
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        return query


class ReflectorStore(Protocol):
    """Where the reflector delivers what it sees."""

    def replace(self, items: Iterable[Json], resource_version: str) -> None:
        """The complete current state (after a list); `items` may be consumed lazily."""
        ...

    def apply(self, event_type: str, obj: Json) -> None:
        """One watch event: ADDED, MODIFIED or DELETED."""
        ...


class _RelistNeeded(Exception):
    """The watch cannot continue from the last resourceVersion."""


class _NotServed(Exception):
    """An optional collection's list answered 404."""


class Reflector:
    """Runs list+watch for one collection on the calling thread until `stop()`."""

    def __init__(
        self,
        rest: RestClient,
        spec: ListWatchSpec,
        store: ReflectorStore,
        *,
        name: str = "",
        page_size: int = DEFAULT_PAGE_SIZE,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        backoff: Backoff | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.rest = rest
        self.spec = spec
        self.store = store
        self.name = name or spec.path
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self._rng = rng or random.Random()
        self._backoff = backoff or Backoff.for_reflector(rng=self._rng)
        self._stopped = threading.Event()
        self._stream_lock = threading.Lock()
        self._stream: StreamResponse | None = None
        self._last_rv = ""
        self._served: bool | None = None
        self._rv_unavailable = False
        self._paginated_result = False
        # Counters for tests and debugging.
        self.lists = 0
        self.watches = 0
        self.watch_resource_versions: deque[str] = deque(maxlen=64)

    @property
    def last_sync_resource_version(self) -> str:
        return self._last_rv

    @property
    def served(self) -> bool:
        """False once an optional collection's list answered 404, until a list succeeds."""
        return self._served is not False

    # --- lifecycle --------------------------------------------------------------------------

    def run(self) -> None:
        """Lists and watches until `stop()`; never raises."""
        log.debug("starting reflector", reflector=self.name)
        while not self._stopped.is_set():
            try:
                self._list_and_watch()
            except Exception as err:
                if self._stopped.is_set():
                    break
                if isinstance(err, ApiError | ApiConnectionError):
                    # client-go's DefaultWatchErrorHandler: HandleError, an error line.
                    log.error("list and watch failed", reflector=self.name, error=str(err))
                else:
                    log.exception("list and watch failed", reflector=self.name)
            if self._stopped.wait(self._backoff.step()):
                break
        log.debug("stopped reflector", reflector=self.name)

    def stop(self) -> None:
        """Makes `run` return soon: wakes waits and unblocks an open watch."""
        self._stopped.set()
        self.interrupt_watch()

    def interrupt_watch(self) -> bool:
        """Cuts the open watch connection, as a network failure would; False if none is open."""
        with self._stream_lock:
            stream = self._stream
        if stream is None:
            return False
        stream.interrupt()
        return True

    # --- list -------------------------------------------------------------------------------

    def _relist_resource_version(self) -> str:
        if self._rv_unavailable:
            return ""  # a consistent read of the newest state
        if not self._last_rv and self.page_size > 0:
            # The first list is a consistent, paginated read: the watch cache answers "0" in
            # one piece whatever the limit, and 5000 nodes of raw JSON in Python objects cost
            # ~30 KiB each at once, where pages of `page_size` keep the peak small.
            return ""
        return self._last_rv or "0"  # "0": any state, served from the watch cache

    def _list(self) -> None:
        rv = self._relist_resource_version()
        result: dict[str, str] = {}
        try:
            self.store.replace(self._list_pages(rv, result), rv)
        except ApiError as err:
            if self.spec.optional and err.not_found:
                self._not_served(err)
                raise _NotServed from err
            if not (err.gone or err.resource_version_too_large):
                raise
            log.debug("relisting at the newest version", reflector=self.name, error=str(err))
            self._rv_unavailable = True
            self.store.replace(self._list_pages("", result), "")
        self._rv_unavailable = False
        self.lists += 1
        self._last_rv = result["resourceVersion"]
        if self._served is False:
            log.info("the API is served now", reflector=self.name, path=self.spec.path)
        self._served = True

    def _not_served(self, err: ApiError) -> None:
        """An optional collection is not served: nothing of it exists (the store is emptied
        and counts as synced); said once per outage, as an error, since whatever uses it is
        held meanwhile."""
        if self._served is not False:
            log.error(
                "the API is not served; retrying in the background",
                reflector=self.name,
                path=self.spec.path,
                error=str(err),
            )
        self._served = False
        self._last_rv = ""
        self.store.replace(iter(()), "")

    def _list_pages(self, rv: str, result: dict[str, str]) -> Iterator[Json]:
        """The listed objects, page by page, so only one page of raw JSON is alive at a time
        (a 5000-node list parsed whole costs far more memory than the objects it yields);
        the list's resourceVersion is left in `result` at the end."""
        query: dict[str, str | int | bool] = self.spec.query()
        if rv:
            query["resourceVersion"] = rv
        # As client-go: page through etcd reads; a list at a known version is served whole
        # from the watch cache (which ignores limit anyway) unless paging was seen before.
        paginate = self.page_size > 0 and (rv in ("", "0") or self._paginated_result)
        if paginate:
            query["limit"] = self.page_size
        page_query: Query = query
        while True:
            try:
                page = self.rest.get(self.spec.path, page_query, timeout=LIST_TIMEOUT)
            except ApiError as err:
                if not (err.gone and "continue" in page_query):
                    raise
                # The continue token expired mid-way: one unpaginated list at the same version
                # (objects already seen are skipped by the store: same resourceVersion).
                full = dict(query)
                full.pop("limit", None)
                page = self.rest.get(self.spec.path, full, timeout=LIST_TIMEOUT)
                yield from page.get("items") or ()
                result["resourceVersion"] = _list_rv(page)
                return
            token = (page.get("metadata") or {}).get("continue")
            items = page.get("items") or ()
            del page["items"]
            yield from items
            del items
            if not token:
                break
            if rv == "0":
                self._paginated_result = True
            page_query = {k: v for k, v in query.items() if k != "resourceVersion"}
            page_query["continue"] = token
        result["resourceVersion"] = _list_rv(page)

    # --- watch ------------------------------------------------------------------------------

    def _list_and_watch(self) -> None:
        try:
            self._list()
        except _NotServed:
            return
        try:
            self._watch_loop()
        except _RelistNeeded:
            return

    def _watch_loop(self) -> None:
        while not self._stopped.is_set():
            timeout_seconds = int(self.min_watch_timeout * (1.0 + self._rng.random()))
            query = self.spec.query()
            query.update(
                allowWatchBookmarks=True,
                resourceVersion=self._last_rv,
                timeoutSeconds=timeout_seconds,
                watch=True,
            )
            started = time.monotonic()
            try:
                stream = self.rest.stream(
                    self.spec.path, query, read_timeout=timeout_seconds + WATCH_READ_SLACK
                )
            except ApiConnectionError as err:
                log.debug("watch failed, backing off", reflector=self.name, error=str(err))
                self._wait_backoff()
                continue
            except ApiError as err:
                self._on_watch_error(err)
                continue
            self.watches += 1
            self.watch_resource_versions.append(str(query["resourceVersion"]))
            with self._stream_lock:
                self._stream = stream
            try:
                if self._stopped.is_set():
                    return
                events = self._consume(stream)
            except ApiError as err:
                self._on_watch_error(err)
                continue
            finally:
                with self._stream_lock:
                    self._stream = None
                stream.close()
            if self._stopped.is_set():
                return  # stop() cut the watch: not a short watch to report
            if events == 0 and time.monotonic() - started < VERY_SHORT_WATCH:
                log.info("very short watch", reflector=self.name)
                self._wait_backoff()

    def _on_watch_error(self, err: ApiError) -> None:
        """A failed watch request or an ERROR event: retry, or ask for a relist."""
        if err.gone:
            log.debug("watch closed: resourceVersion too old", reflector=self.name, error=str(err))
            raise _RelistNeeded from err
        if err.too_many_requests or err.service_unavailable or err.status >= 500:
            if v_enabled(2):
                log.info("watch rejected, backing off", reflector=self.name, error=str(err))
            self._wait_backoff()
            return
        raise err

    def _wait_backoff(self) -> None:
        self._stopped.wait(self._backoff.step())

    def _consume(self, stream: StreamResponse) -> int:
        """Delivers the stream's events until it ends; returns how many arrived."""
        splitter = LineSplitter()
        store = self.store
        count = 0
        try:
            while True:
                data = stream.read1()
                if not data:
                    break
                for line in splitter.feed(data):
                    event = orjson.loads(line)
                    event_type = event.get("type")
                    obj = event.get("object") or {}
                    if event_type == ERROR:
                        raise ApiError.from_status_object(obj)
                    if event_type in (ADDED, MODIFIED, DELETED):
                        store.apply(event_type, obj)
                    elif event_type != BOOKMARK:
                        log.error("unknown watch event", reflector=self.name, type=event_type)
                        continue
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self._last_rv = rv
                    count += 1
        except (ApiConnectionError, orjson.JSONDecodeError) as err:
            if not self._stopped.is_set() and v_enabled(1):  # client-go: unexpected EOF, V(1)
                log.info("watch connection lost", reflector=self.name, error=str(err))
        return count


def _list_rv(page: Json) -> str:
    return str((page.get("metadata") or {}).get("resourceVersion") or "")
