"""The HTTP client every API call goes through: keep-alive connections, orjson bodies,
client-side rate limiting, retries and client-go's rest_client_* metrics (requests, request
duration, rate-limiter wait, request and response size, retries; as client-go, a watch counts
as a request but has no request or response size).

Thread-safe: one RestClient serves all the scheduler's worker threads. Requests reuse a bounded
set of keep-alive connections (callers beyond `max_connections` wait for one). Watches get a
dedicated connection each, so a long-lived stream never holds one the request path needs.
HTTP itself is done by scheduler.client.transport, which costs a fraction of urllib3's CPU.

Retries follow client-go's request.go: a 429 or 5xx response carrying Retry-After is retried for
any verb (the server asked for it), up to 10 times; a transport failure is retried with backoff
only when that is safe - the request never left (connect failed) or the verb is idempotent.
A 401 re-reads the credentials once (rotated token, exec plugin) and retries if they changed.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
import structlog

from scheduler import metrics
from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.client.backoff import Backoff
from scheduler.client.config import ClientConfig
from scheduler.client.ratelimit import TokenBucket
from scheduler.client.tls import send_certificate_file_only
from scheduler.client.transport import ConnectionPool, Response, StreamResponse
from scheduler.logging import v_enabled

log = structlog.get_logger(__name__)

JSON = "application/json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

IDEMPOTENT_VERBS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})

DEFAULT_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 10.0
MAX_RETRY_AFTER_RETRIES = 10  # client-go's maxRetries for Retry-After responses
# client-go's request.go: a wait on the client's own rate limiter longer than LONG_THROTTLE is
# a V(3) line; one longer than EXTRA_LONG_THROTTLE is also logged at V(2) at most once a second,
# else at V(0) at most once every 10 s (its throttledLogger).
LONG_THROTTLE = 0.05
EXTRA_LONG_THROTTLE = 1.0
THROTTLE_LOG_INTERVALS = ((2, 1.0), (0, 10.0))


class _ThrottledLog:
    """client-go's globalThrottledLogger: the first verbosity enabled decides the interval."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = dict.fromkeys((v for v, _ in THROTTLE_LOG_INTERVALS), float("-inf"))

    def attempt(self, now: float) -> bool:
        for verbosity, interval in THROTTLE_LOG_INTERVALS:
            if v_enabled(verbosity):
                with self._lock:
                    if now - self._last[verbosity] < interval:
                        return False
                    self._last[verbosity] = now
                    return True
        return False


_THROTTLED_LOG = _ThrottledLog()
MAX_ERROR_BODY = 1 << 20

Query = Mapping[str, str | int | bool]

__all__ = ["JSON", "STRATEGIC_MERGE_PATCH", "Query", "RestClient", "StreamResponse"]


def _query_string(query: Query | None) -> str:
    if not query:
        return ""
    return "?" + urlencode(
        [(k, ("true" if v else "false") if isinstance(v, bool) else v) for k, v in query.items()]
    )


def ssl_context(config: ClientConfig) -> ssl.SSLContext:
    """One context for all connections, so CA and client certificate are loaded once."""
    ctx = ssl.create_default_context(cafile=config.ca_file)
    if not config.verify_tls:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if config.cert_file:
        ctx.load_cert_chain(config.cert_file, config.key_file)
        send_certificate_file_only(ctx)
    return ctx


def _retry_after(resp: Response | StreamResponse) -> float | None:
    value = resp.headers.get(b"retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        return None


#: Verbs that cannot change anything on the server (still allowed on a fenced client).
READ_VERBS = frozenset({"GET", "HEAD", "OPTIONS"})


def _until(deadline: float | None, delay: float) -> float:
    """`delay`, cut short so that sleeping ends by `deadline` (monotonic; None: no deadline)."""
    if deadline is None:
        return delay
    return max(0.0, min(delay, deadline - time.monotonic()))


@dataclass(slots=True)
class _Call:
    """One request_raw call across its attempts: what is sent, and what its retries used up."""

    method: str
    target: str
    body: bytes | None
    content_type: str | None
    read_timeout: float
    within: float | None
    deadline: float | None
    attempts: int = 0  # retries after transport failures
    retry_afters: int = 0  # retries the server asked for
    auth_retried: bool = False
    backoff: Backoff | None = None

    @property
    def verb(self) -> bytes:
        return self.method.encode()

    @property
    def request_size(self) -> int:
        return len(self.body) if self.body is not None else 0

    def attempt_timeouts(self) -> float | None:
        """Before an attempt: its connect timeout, and its read timeout cut to what is left
        of `within`; raises once nothing is left."""
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ApiConnectionError(
                f"{self.method} {self.target}: no response within {self.within:g}s",
                refused=False,
                request_sent=self.attempts > 0,
            )
        self.read_timeout = min(self.read_timeout, left)
        return self.read_timeout


class RestClient:
    """HTTP calls to one API server. `request` returns the decoded JSON body (or None)."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        max_connections: int = 32,  # kept alive for reuse; more are opened while busy
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_retries: int = 5,
        retry_backoff: Backoff | None = None,
        rate_limiter: TokenBucket | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        parts = urlsplit(config.server)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"unsupported server URL {config.server!r}")
        self.host = parts.netloc
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._max_retries = max_retries
        self._retry_backoff_template = retry_backoff
        self._sleep = sleep
        if rate_limiter is None and config.qps > 0:
            rate_limiter = TokenBucket(config.qps, config.burst)
        self.rate_limiter = rate_limiter
        https = parts.scheme == "https"
        self._pool = ConnectionPool(
            parts.hostname,
            parts.port or (443 if https else 80),
            ssl_context=ssl_context(config) if https else None,
            server_hostname=config.tls_server_name,
            connect_timeout=connect_timeout,
            max_idle=max_connections,
        )
        self._headers_lock = threading.Lock()
        self._headers_auth: Mapping[str, str] | None = None
        self._headers: dict[str | None, bytes] = {}
        self._request_counters: dict[tuple[str, str], Any] = {}
        self._durations: dict[str, Any] = {}
        self._throttle_durations: dict[str, Any] = {}
        self._request_sizes: dict[str, Any] = {}
        self._response_sizes: dict[str, Any] = {}
        self._retry_counters: dict[tuple[str, str], Any] = {}
        self._fenced = ""

    # --- plumbing ---------------------------------------------------------------------------

    def _header_block(self, content_type: str | None) -> bytes:
        """The encoded header lines, cached per content type until the auth header changes."""
        auth = self.config.auth()
        if auth is not self._headers_auth:
            with self._headers_lock:
                self._headers = {}
                self._headers_auth = auth
        block = self._headers.get(content_type)
        if block is None:
            lines = {
                "Host": self.host,
                "User-Agent": self.config.user_agent,
                "Accept": JSON,
                **auth,
            }
            if content_type:
                lines["Content-Type"] = content_type
            block = "".join(f"{k}: {v}\r\n" for k, v in lines.items()).encode("latin-1")
            self._headers[content_type] = block
        return block

    def _head(
        self, method: str, target: str, content_type: str | None, body: bytes | None
    ) -> bytes:
        head = f"{method} {target} HTTP/1.1\r\n".encode() + self._header_block(content_type)
        if body is not None:
            head += b"Content-Length: %d\r\n" % len(body)
        return head

    def _count(self, code: str, method: str) -> None:
        counter = self._request_counters.get((code, method))
        if counter is None:
            counter = metrics.rest_client_requests.labels(code, method, self.host)
            self._request_counters[(code, method)] = counter
        counter.inc()

    def _count_retry(self, code: str, method: str) -> None:
        """rest_client_request_retries_total, per attempt that is retried (client-go counts
        every response or error but the last one's)."""
        counter = self._retry_counters.get((code, method))
        if counter is None:
            counter = metrics.rest_client_request_retries.labels(code, method, self.host)
            self._retry_counters[(code, method)] = counter
        counter.inc()

    def _observe(self, cache: dict[str, Any], family: Any, method: str, seconds: float) -> None:
        child = cache.get(method)
        if child is None:
            child = family.labels(method, self.host)
            cache[method] = child
        child.observe(seconds)

    def _observe_duration(self, method: str, start: float) -> None:
        self._observe(
            self._durations,
            metrics.rest_client_request_duration,
            method,
            time.perf_counter() - start,
        )

    def _observe_response_size(self, method: str, size: int) -> None:
        self._observe(self._response_sizes, metrics.rest_client_response_size, method, size)

    def _record_attempt(self, call: _Call, code: str, start: float) -> None:
        """The request families of one attempt: duration, count by code, request size."""
        self._observe_duration(call.method, start)
        self._count(code, call.method)
        self._observe(
            self._request_sizes, metrics.rest_client_request_size, call.method, call.request_size
        )

    def _throttle(self, method: str, target: str) -> None:
        if self.rate_limiter is None:
            return
        waited = self.rate_limiter.wait()
        self._observe(
            self._throttle_durations, metrics.rest_client_rate_limiter_duration, method, waited
        )
        if waited <= LONG_THROTTLE:
            return
        if v_enabled(3) or (
            waited > EXTRA_LONG_THROTTLE and _THROTTLED_LOG.attempt(time.monotonic())
        ):
            log.info(
                "waited due to client-side throttling, not priority and fairness",
                seconds=round(waited, 3),
                verb=method,
                url=target,
            )

    def _new_backoff(self) -> Backoff:
        """Per-request retry delays: 0.1 s doubling to 2 s, up to +50% jitter."""
        template = self._retry_backoff_template
        if template is not None:
            return Backoff(
                template.initial,
                factor=template.factor,
                jitter=template.jitter,
                cap=template.cap,
                steps=self._max_retries + 1,
            )
        return Backoff(0.1, factor=2.0, jitter=0.5, cap=2.0, steps=self._max_retries + 1)

    def fence(self, reason: str) -> None:
        """From now on every call that could write fails at once without being sent (a leader
        that lost its lease must not bind, patch or delete anything more); reads still work."""
        self._fenced = reason

    # --- requests ---------------------------------------------------------------------------

    def request_raw(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
        within: float | None = None,
    ) -> tuple[int, bytes]:
        """Performs the call with throttling and retries; returns (status, body) of a 2xx.

        `timeout` bounds each attempt's reads; `within` bounds the whole call, retries, waits
        and connecting included (a leader must know by its renew deadline whether it renewed).
        Raises ApiError for an error status and ApiConnectionError when no response came (or
        when the client is fenced and the call would write).
        """
        target = self._prefix + path + _query_string(query)
        if self._fenced and method not in READ_VERBS:
            raise ApiConnectionError(
                f"{method} {target} not sent: {self._fenced}", refused=False, request_sent=False
            )
        if body is not None and content_type is None:
            content_type = JSON
        call = _Call(
            method,
            target,
            body,
            content_type,
            read_timeout=self._timeout if timeout is None else timeout,
            within=within,
            deadline=None if within is None else time.monotonic() + within,
        )
        while True:
            connect_timeout = call.attempt_timeouts()
            try:
                resp = self._attempt(call, connect_timeout)
            except ApiConnectionError as err:
                if self._retry_after_error(call, err):
                    continue
                raise
            if resp.status < 300:
                self._observe_response_size(method, len(resp.body))
                return resp.status, resp.body
            if self._retry_after_response(call, resp):
                continue
            if resp.body:
                self._observe_response_size(method, len(resp.body))
            raise ApiError.from_response(
                resp.status, _decode_error_body(resp.body), _retry_after(resp)
            )

    def _attempt(self, call: _Call, connect_timeout: float | None) -> Response:
        """One throttled attempt, its duration, count and request size recorded."""
        self._throttle(call.method, call.target)
        head = self._head(call.method, call.target, call.content_type, call.body)
        start = time.perf_counter()
        try:
            resp = self._pool.request(
                call.verb, head, call.body, call.read_timeout, connect_timeout
            )
        except ApiConnectionError:
            self._record_attempt(call, "<error>", start)
            raise
        self._record_attempt(call, str(resp.status), start)
        return resp

    def _retry_after_error(self, call: _Call, err: ApiConnectionError) -> bool:
        """After a transport failure: backs off and says to retry when that is safe (the
        request never left, or its verb is idempotent) and retries are left."""
        method = call.method
        safe = not err.request_sent or method in IDEMPOTENT_VERBS
        if not safe or call.attempts >= self._max_retries:
            return False
        self._count_retry("<error>", method)
        call.attempts += 1
        if call.backoff is None:
            call.backoff = self._new_backoff()
        log.debug("retrying after connection error", verb=method, url=call.target, error=str(err))
        self._sleep(_until(call.deadline, call.backoff.step()))
        return True

    def _retry_after_response(self, call: _Call, resp: Response) -> bool:
        """After an error status: waits and says to retry when the server asked (429 or 5xx
        with Retry-After), or at once after a 401 when re-read credentials changed."""
        status = resp.status
        code = str(status)
        retry_after = _retry_after(resp)
        if (
            retry_after is not None
            and (status == 429 or status >= 500)
            and call.retry_afters < MAX_RETRY_AFTER_RETRIES
        ):
            call.retry_afters += 1
            self._count_retry(code, call.method)
            log.debug(
                "retrying as the server asked", verb=call.method, url=call.target, status=status
            )
            self._sleep(_until(call.deadline, retry_after))
            return True
        if status == 401 and not call.auth_retried:
            call.auth_retried = True
            self.config.auth.invalidate()
            if self.config.auth() is not self._headers_auth:
                self._count_retry(code, call.method)
                return True
        return False

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | None = None,
        within: float | None = None,
    ) -> Any:
        """`request_raw` with a JSON body (bytes are sent as they are) and a decoded result."""
        if body is not None and not isinstance(body, bytes | bytearray):
            body = orjson.dumps(body)
        _, data = self.request_raw(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            timeout=timeout,
            within=within,
        )
        return orjson.loads(data) if data else None

    def get(
        self,
        path: str,
        query: Query | None = None,
        *,
        timeout: float | None = None,
        within: float | None = None,
    ) -> Any:
        return self.request("GET", path, query=query, timeout=timeout, within=within)

    def post(
        self, path: str, body: Any, *, timeout: float | None = None, within: float | None = None
    ) -> Any:
        return self.request("POST", path, body=body, timeout=timeout, within=within)

    def put(
        self, path: str, body: Any, *, timeout: float | None = None, within: float | None = None
    ) -> Any:
        return self.request("PUT", path, body=body, timeout=timeout, within=within)

    def patch(
        self,
        path: str,
        body: Any,
        content_type: str = STRATEGIC_MERGE_PATCH,
        *,
        timeout: float | None = None,
    ) -> Any:
        return self.request("PATCH", path, body=body, content_type=content_type, timeout=timeout)

    def delete(self, path: str, body: Any = None, *, timeout: float | None = None) -> Any:
        return self.request("DELETE", path, body=body, timeout=timeout)

    def stream(
        self, path: str, query: Query | None = None, *, read_timeout: float
    ) -> StreamResponse:
        """Opens a streaming GET (a watch) on a dedicated connection, without retries.

        `read_timeout` bounds each read, so a silently dead connection is noticed; it should
        exceed the server-side timeoutSeconds.
        """
        target = self._prefix + path + _query_string(query)
        self._throttle("GET", target)
        head = self._head("GET", target, None, None)
        start = time.perf_counter()
        try:
            resp = self._pool.stream(head, read_timeout)
        except ApiConnectionError:
            self._count("<error>", "GET")
            raise
        self._observe_duration("GET", start)
        self._count(str(resp.status), "GET")
        if resp.status < 300:
            return resp
        parts: list[bytes] = []
        try:
            size = 0
            while size < MAX_ERROR_BODY and (data := resp.read1()):
                parts.append(data)
                size += len(data)
        except ApiConnectionError:
            pass
        finally:
            resp.close()
        if resp.status == 401:
            self.config.auth.invalidate()
        raise ApiError.from_response(
            resp.status, _decode_error_body(b"".join(parts)), _retry_after(resp)
        )

    def close(self) -> None:
        self._pool.close()


def _decode_error_body(data: bytes) -> Any:
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return data[:1024].decode("utf-8", "replace").strip()
