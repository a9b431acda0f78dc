"""Pick free loopback ports and hold them until the component that uses them is listening.

A port found free and then released can be taken by someone else before our component
binds it (two control planes starting at once would race). So each port stays bound by a
non-listening socket with SO_REUSEADDR until the component is up: Linux lets the Go
listener (which also sets SO_REUSEADDR) bind it, while other pickers - ours, or the
kernel's ephemeral allocator - see it as taken.
"""

from __future__ import annotations

import socket
from types import TracebackType

LOOPBACK = "127.0.0.1"


class PortReservation:
    """A set of reserved loopback ports, released explicitly or on context exit."""

    def __init__(self) -> None:
        self._sockets: dict[int, socket.socket] = {}

    def take(self) -> int:
        """Reserve and return a fresh free port on 127.0.0.1."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, 0))
        port = int(sock.getsockname()[1])
        self._sockets[port] = sock
        return port

    def release(self, port: int | None = None) -> None:
        """Release one port (or every port) once its owner listens on it."""
        ports = [port] if port is not None else list(self._sockets)
        for p in ports:
            sock = self._sockets.pop(p, None)
            if sock is not None:
                sock.close()

    def __enter__(self) -> PortReservation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def is_listening(port: int, host: str = LOOPBACK) -> bool:
    """True if something accepts TCP connections on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0
