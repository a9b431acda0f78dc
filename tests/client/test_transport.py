"""The HTTP/1.1 transport against a raw socket server: framing, keep-alive, streaming."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from scheduler.api.errors import ApiConnectionError
from scheduler.client.transport import ConnectionPool


class RawServer:
    """Answers each request on a connection with the next `script` entry: a list of raw writes.

    An entry may be a callable taking the connection (to close or reset it).
    """

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port: int = self.listener.getsockname()[1]
        self.script: list[list[bytes] | Callable[[socket.socket], None]] = []
        self.requests: list[bytes] = []
        self.connections = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buf) < length:
                    buf += conn.recv(65536)
                with self._lock:
                    self.requests.append(head + b"\r\n\r\n" + buf[:length])
                    action = self.script.pop(0)
                buf = buf[length:]
                if callable(action):
                    action(conn)
                    return
                for piece in action:
                    conn.sendall(piece)

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def server() -> Iterator[RawServer]:
    srv = RawServer()
    yield srv
    srv.close()


def pool_for(server: RawServer) -> ConnectionPool:
    return ConnectionPool("127.0.0.1", server.port, ssl_context=None, max_idle=4)


HEAD = b"GET /x HTTP/1.1\r\nHost: h\r\n"


def ok(body: bytes, extra: bytes = b"") -> list[bytes]:
    return [b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)]


def test_content_length_bodies_over_one_kept_alive_connection(server: RawServer) -> None:
    server.script = [ok(b'{"a":1}'), ok(b""), ok(b"xyz")]
    pool = pool_for(server)
    assert pool.request(b"GET", HEAD, None, 5).body == b'{"a":1}'
    assert pool.request(b"GET", HEAD, None, 5).body == b""
    post = b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n"
    resp = pool.request(b"POST", post, b"body", 5)
    assert (resp.status, resp.body) == (200, b"xyz")
    assert server.connections == 1
    assert server.requests[2].endswith(b"\r\n\r\nbody")


def test_chunked_body_with_extensions_and_trailers(server: RawServer) -> None:
    server.script = [
        [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"4;ext=1\r\nWiki\r\n",
            b"5\r\npedia\r\n0\r\nTrailer: x\r\n\r\n",
        ],
        ok(b"next"),
    ]
    pool = pool_for(server)
    assert pool.request(b"GET", HEAD, None, 5).body == b"Wikipedia"
    assert pool.request(b"GET", HEAD, None, 5).body == b"next"  # framing stayed in sync
    assert server.connections == 1


def test_a_large_body_in_many_small_chunks(server: RawServer) -> None:
    payload = bytes(range(256)) * 12000  # ~3 MB, so the read buffer is compacted on the way
    raw = b"".join(
        b"%x\r\n%s\r\n" % (len(payload[i : i + 1000]), payload[i : i + 1000])
        for i in range(0, len(payload), 1000)
    )
    raw += b"0\r\n\r\n"
    pieces = [raw[i : i + 7919] for i in range(0, len(raw), 7919)]
    server.script = [[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", *pieces], ok(b"x")]
    pool = pool_for(server)
    assert pool.request(b"GET", HEAD, None, 5).body == payload
    assert pool.request(b"GET", HEAD, None, 5).body == b"x"


def test_interim_responses_are_skipped_and_headers_parsed(server: RawServer) -> None:
    server.script = [
        [b"HTTP/1.1 100 Continue\r\n\r\n", *ok(b"{}", b"Retry-After: 3\r\nX-Multi: a\r\n")]
    ]
    resp = pool_for(server).request(b"GET", HEAD, None, 5)
    assert resp.status == 200
    assert resp.header(b"retry-after") == "3"
    assert resp.header(b"x-multi") == "a"


def test_connection_close_is_honoured(server: RawServer) -> None:
    server.script = [ok(b"1", b"Connection: close\r\n"), ok(b"2")]
    pool = pool_for(server)
    assert pool.request(b"GET", HEAD, None, 5).body == b"1"
    assert pool.request(b"GET", HEAD, None, 5).body == b"2"
    assert server.connections == 2


def test_a_connection_the_server_closed_while_idle_is_replaced(server: RawServer) -> None:
    def answer_then_close(conn: socket.socket) -> None:
        conn.sendall(ok(b"1")[0])
        conn.shutdown(socket.SHUT_RDWR)

    server.script = [answer_then_close, ok(b"2")]
    pool = pool_for(server)
    assert pool.request(b"GET", HEAD, None, 5).body == b"1"
    # Wait until the close has arrived, as it would have during an idle period.
    conn = pool._idle[0]
    assert conn.sock.recv(1, socket.MSG_PEEK) == b""
    post = b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n"
    assert pool.request(b"POST", post, b"x", 5).body == b"2"
    assert server.connections == 2


def test_a_close_mid_response_is_a_connection_error_after_sending(server: RawServer) -> None:
    def partial(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        conn.close()

    server.script = [partial]
    pool = pool_for(server)
    with pytest.raises(ApiConnectionError) as info:
        pool.request(b"GET", HEAD, None, 5)
    assert info.value.request_sent
    assert not pool._idle  # a broken connection is never reused


def test_refused_connections_are_reported_as_not_sent() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    pool = ConnectionPool("127.0.0.1", port, ssl_context=None)
    with pytest.raises(ApiConnectionError) as info:
        pool.request(b"GET", HEAD, None, 5)
    assert info.value.refused and not info.value.request_sent


def test_streamed_chunks_split_anywhere_are_reassembled(server: RawServer) -> None:
    payload = b'{"type":"ADDED"}\n{"type":"MODIFIED"}\n'
    raw = b"%x\r\n%s\r\n" % (len(payload[:17]), payload[:17])
    raw += b"%x\r\n%s\r\n0\r\n\r\n" % (len(payload[17:]), payload[17:])
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    for cut in range(1, len(raw)):
        server.script = [[head + raw[:cut], raw[cut:]]]
        stream = pool_for(server).stream(HEAD, 5)
        got = b""
        while data := stream.read1():
            got += data
        stream.close()
        assert got == payload, cut


def test_a_stream_cut_mid_chunk_raises(server: RawServer) -> None:
    def partial(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nonly-half")
        conn.close()

    server.script = [partial]
    stream = pool_for(server).stream(HEAD, 5)
    assert stream.read1() == b"only-half"
    with pytest.raises(ApiConnectionError):
        stream.read1()


def test_interrupt_unblocks_a_waiting_stream_read(server: RawServer) -> None:
    server.script = [[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]]
    stream = pool_for(server).stream(HEAD, 30)
    result: list[BaseException | bytes] = []

    def read() -> None:
        try:
            result.append(stream.read1())
        except ApiConnectionError as err:
            result.append(err)

    reader = threading.Thread(target=read)
    reader.start()
    stream.interrupt()
    reader.join(10)
    assert not reader.is_alive()
    assert isinstance(result[0], ApiConnectionError)
