"""Reassembling watch event lines from arbitrarily split chunks."""

from __future__ import annotations

import orjson

from scheduler.client.watch import LineSplitter


def _events(n: int) -> list[bytes]:
    return [
        orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": f"p{i}", "rv": str(i)}}})
        for i in range(n)
    ]


def test_every_split_point_yields_the_same_lines() -> None:
    lines = _events(3)
    stream = b"".join(line + b"\n" for line in lines)
    for cut in range(len(stream) + 1):
        splitter = LineSplitter()
        got = splitter.feed(stream[:cut]) + splitter.feed(stream[cut:])
        assert got == lines, cut
        assert splitter.pending_bytes == 0


def test_byte_at_a_time() -> None:
    lines = _events(4)
    stream = b"".join(line + b"\n" for line in lines)
    splitter = LineSplitter()
    got: list[bytes] = []
    for i in range(len(stream)):
        got += splitter.feed(stream[i : i + 1])
    assert got == lines


def test_an_incomplete_last_line_is_held_back() -> None:
    first, second = _events(2)
    splitter = LineSplitter()
    assert splitter.feed(first + b"\n" + second[:10]) == [first]
    assert splitter.pending_bytes == 10
    assert splitter.feed(second[10:]) == []
    assert splitter.feed(b"\n") == [second]


def test_blank_lines_are_skipped() -> None:
    (line,) = _events(1)
    assert LineSplitter().feed(b"\n\r\n" + line + b"\n\n") == [line]
