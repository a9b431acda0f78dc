"""Decoding a watch stream: newline-delimited JSON events arriving in arbitrary chunks.

The API server writes one `{"type": ..., "object": ...}` document per line, but the chunks that
reach us split lines anywhere. `LineSplitter` reassembles them with bytes.split (C speed, one
copy per line) and keeps a partial last line until its end arrives; a partial line left when the
stream breaks is dropped, and the reflector resumes from the last complete event.
"""

from __future__ import annotations

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"


class LineSplitter:
    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: list[bytes] = []

    def feed(self, data: bytes) -> list[bytes]:
        """The lines completed by `data`, in order, without their newline; blank lines skipped."""
        parts = data.split(b"\n")
        tail = parts.pop()
        if not parts:
            if tail:
                self._pending.append(tail)
            return []
        if self._pending:
            self._pending.append(parts[0])
            parts[0] = b"".join(self._pending)
            self._pending = []
        if tail:
            self._pending.append(tail)
        return [line for line in parts if line and not line.isspace()]

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete line held back."""
        return sum(len(p) for p in self._pending)
