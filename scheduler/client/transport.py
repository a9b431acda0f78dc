"""A lean HTTP/1.1 transport: keep-alive connections over plain sockets or TLS.

Why not urllib3/httpx/http.client: against the local API server they cost 0.5-1 ms (urllib3),
0.8-1.3 ms (httpx) and 0.3-0.5 ms (http.client) of CPU per request, most of it in header handling
(email.feedparser), header dict building and layers of wrappers, and the scheduler's threads
share one GIL. This module writes each request with one sendall of pre-encoded bytes and parses
the response with bytes operations: 0.15-0.35 ms per request through RestClient on the same
machine, about 1 ms of CPU less per scheduled pod than urllib3 (`python -m
e2e.bench.probes.transport`; docs/benchmarks.md, "Tools and probes"). It implements just what
the API server needs: Content-Length and chunked bodies, keep-alive with stale-connection
detection, `Connection: close`, streaming chunked responses for watches. No proxies, no
compression, no HTTP/2.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading

from scheduler.api.errors import ApiConnectionError

MAX_HEAD = 1 << 20  # a response head larger than this is garbage
RECV_SIZE = 65536


class _ConnectionLost(Exception):
    """The peer closed or reset the connection (or it timed out) mid-exchange."""


class Head:
    """A response's status line and headers, parsed only as far as asked."""

    __slots__ = ("_lower", "raw", "status")

    def __init__(self, status: int, raw: bytes) -> None:
        self.status = status
        self.raw = raw  # status line and header lines, without the final blank line
        self._lower = raw.lower()

    def get(self, name: bytes) -> bytes | None:
        """The first value of header `name` (lower-case), stripped; None when absent."""
        at = self._lower.find(b"\r\n" + name + b":")
        if at < 0:
            return None
        start = at + len(name) + 3
        end = self.raw.find(b"\r\n", start)
        return self.raw[start : end if end >= 0 else len(self.raw)].strip()

    def body_kind(self, method: bytes) -> tuple[str, int]:
        """How the body is delimited: ("none"|"length"|"chunked"|"close", length)."""
        if method == b"HEAD" or self.status in (204, 304):
            return "none", 0
        encoding = self.get(b"transfer-encoding")
        if encoding is not None and b"chunked" in encoding.lower():
            return "chunked", 0
        length = self.get(b"content-length")
        if length is not None:
            return "length", int(length)
        return "close", 0

    def keeps_alive(self) -> bool:
        value = self.get(b"connection")
        return value is None or value.lower() != b"close"


class Response:
    __slots__ = ("body", "headers", "status")

    def __init__(self, head: Head, body: bytes) -> None:
        self.status = head.status
        self.headers = head
        self.body = body

    def header(self, name: bytes) -> str | None:
        value = self.headers.get(name)
        return value.decode("latin-1") if value is not None else None


class Connection:
    """One connection; used by one thread at a time."""

    __slots__ = ("buf", "sock", "timeout")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.timeout: float | None = None

    def set_timeout(self, timeout: float | None) -> None:
        if timeout != self.timeout:
            self.sock.settimeout(timeout)
            self.timeout = timeout

    def idle_and_alive(self) -> bool:
        """A kept-alive connection the server has not closed (nothing readable while idle)."""
        if self.buf:
            return False
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def interrupt(self) -> None:
        """Unblocks a recv in another thread (the peer sees the connection end)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    # --- reading ----------------------------------------------------------------------------

    def _recv(self) -> bytes:
        try:
            data = self.sock.recv(RECV_SIZE)
        except (OSError, ssl.SSLError) as err:  # includes timeouts and resets
            raise _ConnectionLost(str(err) or type(err).__name__) from err
        if not data:
            raise _ConnectionLost("connection closed by the server")
        return data

    def read_head(self) -> Head:
        """Status and headers of the next response (skipping 1xx interim responses)."""
        while True:
            buf = self.buf
            start = 0
            while True:
                end = buf.find(b"\r\n\r\n", start)
                if end >= 0:
                    break
                if len(buf) > MAX_HEAD:
                    raise _ConnectionLost("response head too large")
                start = max(0, len(buf) - 3)
                buf += self._recv()
            raw = buf[:end]
            self.buf = buf[end + 4 :]
            if not raw.startswith(b"HTTP/1.") or len(raw) < 12:
                raise _ConnectionLost(f"malformed status line {raw[:40]!r}")
            try:
                status = int(raw[9:12])
            except ValueError as err:
                raise _ConnectionLost(f"malformed status line {raw[:40]!r}") from err
            if not 100 <= status < 200:
                return Head(status, raw)

    def read_exact(self, length: int) -> bytes:
        buf = self.buf
        if len(buf) < length:
            parts = [buf]
            have = len(buf)
            while have < length:
                data = self._recv()
                parts.append(data)
                have += len(data)
            buf = b"".join(parts)
        self.buf = buf[length:]
        return buf[:length]

    def read_chunk_size(self) -> int:
        buf = self.buf
        while True:
            end = buf.find(b"\r\n")
            if end >= 0:
                break
            if len(buf) > MAX_HEAD:
                raise _ConnectionLost("chunk header too large")
            buf += self._recv()
        self.buf = buf[end + 2 :]
        try:
            return int(buf[:end].split(b";", 1)[0], 16)
        except ValueError as err:
            raise _ConnectionLost(f"bad chunk header {buf[:end][:40]!r}") from err

    def read_chunked(self) -> bytes:
        """A whole chunked body (a large list arrives in many small chunks).

        Works on one growing bytearray with an offset, so each byte is copied a bounded
        number of times however many chunks there are.
        """
        buf = bytearray(self.buf)
        pos = 0
        parts: list[bytes] = []
        while True:
            end = buf.find(b"\r\n", pos)
            while end < 0:
                if len(buf) - pos > MAX_HEAD:
                    raise _ConnectionLost("chunk header too large")
                buf += self._recv()
                end = buf.find(b"\r\n", pos)
            try:
                size = int(bytes(buf[pos:end]).split(b";", 1)[0], 16)
            except ValueError as err:
                raise _ConnectionLost(f"bad chunk header {bytes(buf[pos:end])[:40]!r}") from err
            pos = end + 2
            if size == 0:
                self.buf = bytes(buf[pos:])
                self._skip_trailers()
                return b"".join(parts)
            while len(buf) < pos + size + 2:
                buf += self._recv()
            parts.append(bytes(buf[pos : pos + size]))
            pos += size + 2
            if pos > 1 << 20:  # drop what was consumed, now and then
                del buf[:pos]
                pos = 0

    def _skip_trailers(self) -> None:
        while True:
            buf = self.buf
            end = buf.find(b"\r\n")
            if end < 0:
                self.buf = buf + self._recv()
                continue
            self.buf = buf[end + 2 :]
            if end == 0:
                return

    def read_until_close(self) -> bytes:
        parts = [self.buf]
        self.buf = b""
        while True:
            try:
                data = self.sock.recv(RECV_SIZE)
            except (OSError, ssl.SSLError) as err:
                raise _ConnectionLost(str(err)) from err
            if not data:
                return b"".join(parts)
            parts.append(data)


class StreamResponse:
    """An open streaming response (a watch): `read1` hands out body bytes as they arrive."""

    __slots__ = ("_closed", "_conn", "_done", "_kind", "_remaining", "headers", "status")

    def __init__(self, conn: Connection, head: Head, kind: str, length: int) -> None:
        self._conn = conn
        self.status = head.status
        self.headers = head
        self._kind = kind
        self._remaining = length if kind == "length" else 0  # bytes left in the current chunk
        self._done = kind == "none" or (kind == "length" and length == 0)
        self._closed = False

    def read1(self) -> bytes:
        """At least one byte of body (blocking), or b"" at its proper end.

        Raises ApiConnectionError when the connection breaks before the end.
        """
        if self._done:
            return b""
        conn = self._conn
        try:
            if self._kind == "close":
                if conn.buf:
                    data, conn.buf = conn.buf, b""
                    return data
                try:
                    data = conn.sock.recv(RECV_SIZE)
                except (OSError, ssl.SSLError) as err:
                    raise _ConnectionLost(str(err)) from err
                if not data:
                    self._done = True
                return data
            if self._kind == "length":
                if not conn.buf:
                    conn.buf = conn._recv()
                data = conn.buf[: self._remaining]
                conn.buf = conn.buf[len(data) :]
                self._remaining -= len(data)
                self._done = self._remaining == 0
                return data
            return self._read_chunks()
        except _ConnectionLost as err:
            raise ApiConnectionError(
                f"stream broken: {err}", refused=False, request_sent=True
            ) from err

    def _read_chunks(self) -> bytes:
        """Everything decodable from what has arrived: whole chunks and a partial last one.

        Blocks only while it has nothing to return.
        """
        conn = self._conn
        parts: list[bytes] = []
        while True:
            if self._remaining == 0:
                if parts and b"\r\n" not in conn.buf:
                    break  # return what we have rather than wait for the next chunk
                size = conn.read_chunk_size()
                if size == 0:
                    conn._skip_trailers()
                    self._done = True
                    break
                self._remaining = size + 2  # the chunk's data and its CRLF
            if not conn.buf:
                if parts:
                    break
                conn.buf = conn._recv()
            remaining = self._remaining
            take = conn.buf[:remaining]
            conn.buf = conn.buf[len(take) :]
            self._remaining = remaining - len(take)
            data_len = min(len(take), remaining - 2)
            if data_len > 0:
                parts.append(take[:data_len] if data_len < len(take) else take)
        return b"".join(parts)

    def interrupt(self) -> None:
        self._conn.interrupt()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._conn.close()


class ConnectionPool:
    """Keep-alive connections to one server, made on demand.

    Concurrency is bounded by the callers' threads; at most `max_idle` connections are kept
    for reuse, extra ones are closed when returned (as urllib3 with block=False).
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None = None,
        connect_timeout: float = 10.0,
        max_idle: int = 32,
    ) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname or host
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def connect(self, timeout: float | None = None) -> Connection:
        """A new connection (TLS handshake included); never from the idle set."""
        connect_timeout = self.connect_timeout if timeout is None else timeout
        try:
            sock = socket.create_connection((self.host, self.port), timeout=connect_timeout)
        except OSError as err:
            raise ApiConnectionError(
                f"connecting to {self.host}:{self.port}: {err}",
                refused=isinstance(err, ConnectionRefusedError),
                request_sent=False,
            ) from err
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                sock = self.ssl_context.wrap_socket(sock, server_hostname=self.server_hostname)
        except (OSError, ssl.SSLError) as err:
            sock.close()
            raise ApiConnectionError(
                f"TLS handshake with {self.host}:{self.port}: {err}",
                refused=False,
                request_sent=False,
            ) from err
        conn = Connection(sock)
        conn.timeout = connect_timeout
        return conn

    def _acquire(self, connect_timeout: float | None = None) -> tuple[Connection, bool]:
        """(connection, reused); a new connection waits at most `connect_timeout` (default:
        the pool's)."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self.connect(connect_timeout), False
            if conn.idle_and_alive():
                return conn, True
            conn.close()

    def _release(self, conn: Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def request(
        self,
        method: bytes,
        head: bytes,
        body: bytes | None,
        timeout: float | None,
        connect_timeout: float | None = None,
    ) -> Response:
        """Sends `head` (request line and headers, without the final blank line) and `body`.

        Raises ApiConnectionError; `request_sent` says whether the server may have seen it.
        """
        conn, _ = self._acquire(connect_timeout)
        try:
            conn.set_timeout(timeout)
            message = head + (b"\r\n" if body is None else b"\r\n" + body)
            try:
                conn.sock.sendall(message)
            except (OSError, ssl.SSLError) as err:
                raise _ConnectionLost(str(err)) from err
            response_head = conn.read_head()
            kind, length = response_head.body_kind(method)
            if kind == "length":
                data = conn.read_exact(length)
            elif kind == "chunked":
                data = conn.read_chunked()
            elif kind == "close":
                data = conn.read_until_close()
            else:
                data = b""
        except _ConnectionLost as err:
            conn.close()
            raise ApiConnectionError(
                f"{method.decode()} to {self.host}:{self.port}: {err}",
                refused=False,
                request_sent=True,
            ) from err
        except BaseException:
            conn.close()
            raise
        if kind == "close" or not response_head.keeps_alive():
            conn.close()
        else:
            self._release(conn)
        return Response(response_head, data)

    def stream(self, head: bytes, timeout: float | None) -> StreamResponse:
        """Sends a GET on a dedicated new connection and returns once the head arrived."""
        conn = self.connect()
        try:
            conn.set_timeout(timeout)
            try:
                conn.sock.sendall(head + b"\r\n")
            except (OSError, ssl.SSLError) as err:
                raise _ConnectionLost(str(err)) from err
            response_head = conn.read_head()
        except _ConnectionLost as err:
            conn.close()
            raise ApiConnectionError(
                f"GET to {self.host}:{self.port}: {err}", refused=False, request_sent=True
            ) from err
        except BaseException:
            conn.close()
            raise
        kind, length = response_head.body_kind(b"GET")
        return StreamResponse(conn, response_head, kind, length)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
