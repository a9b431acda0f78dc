"""Network faults between a process and the API server, for the reliability tests.

`PartitionProxy` forwards TCP (TLS passes through untouched) from a loopback port to the API
server. `partition()` cuts the path without closing anything: connections stay open, nothing
is forwarded either way and new connections hang, as behind a stalled middlebox. `heal()`
resets every connection that lived through the partition, dropping what it held (a real
partition outlasting TCP's patience ends the same way), and forwards anew from then on. It
counts the bytes clients send after the heal, so a test can prove a fenced process sent nothing.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType

from e2e.cluster.ports import LOOPBACK


class PartitionProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind((LOOPBACK, 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._generation = 0  # bumped by heal(): older connections are dropped
        self._sockets: list[tuple[int, socket.socket]] = []
        self.bytes_after_heal = 0
        self._healed = False
        self._closed = False

    def start(self) -> PartitionProxy:
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()
        return self

    def partition(self) -> None:
        self._open.clear()

    def heal(self) -> None:
        with self._lock:
            self._generation += 1
            stale = [sock for gen, sock in self._sockets if gen < self._generation]
            self._sockets = [(g, s) for g, s in self._sockets if g >= self._generation]
            self._healed = True
        for sock in stale:
            _reset(sock)
        self._open.set()

    def close(self) -> None:
        self._closed = True
        self._open.set()
        self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for _, sock in sockets:
            _reset(sock)

    def __enter__(self) -> PartitionProxy:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        with self._lock:
            generation = self._generation
            self._sockets.append((generation, client))
        self._open.wait()  # during a partition a new connection hangs (then is reset)
        with self._lock:
            if generation < self._generation:
                return
        try:
            upstream = socket.create_connection(self.target, timeout=10)
        except OSError:
            _reset(client)
            return
        upstream.settimeout(None)  # the 10 s bound the connect only; watches idle for longer
        with self._lock:
            self._sockets.append((generation, upstream))
        for src, dst, counted in ((client, upstream, True), (upstream, client, False)):
            threading.Thread(
                target=self._pump, args=(src, dst, generation, counted), daemon=True
            ).start()

    def _pump(self, src: socket.socket, dst: socket.socket, generation: int, counted: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                _reset(dst)
                return
            self._open.wait()
            with self._lock:
                if generation < self._generation:  # lived through a partition: dropped
                    return
                if counted and self._healed:
                    self.bytes_after_heal += len(data)
            try:
                dst.sendall(data)
            except OSError:
                _reset(src)
                return


def _reset(sock: socket.socket) -> None:
    """Closes with a TCP reset (SO_LINGER 0): the peer sees the connection die at once.

    close() alone does not end a recv() another thread is blocked in (Linux keeps the socket
    until that call returns, so nothing would reach the peer while it idles); shutting the
    read side down first wakes that reader without sending a FIN, then the close resets.
    """
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RD)
    with contextlib.suppress(OSError):
        sock.close()
