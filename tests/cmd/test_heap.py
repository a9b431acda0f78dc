"""The periodic C-heap trim (scheduler.cmd.heap)."""

from __future__ import annotations

import sys

import pytest

from scheduler.cmd import heap


def test_without_malloc_trim_nothing_is_called_and_start_up_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    trimmer = heap.HeapTrimmer(loader=lambda: None)
    assert not trimmer.available
    trimmer.announce()
    assert "malloc_trim is not available" in capsys.readouterr().out
    assert trimmer.trim() is False
    assert trimmer.trims == 0


def test_each_trim_calls_malloc_trim_with_no_padding() -> None:
    calls: list[int] = []

    def fake(pad: int) -> int:
        calls.append(pad)
        return 1

    trimmer = heap.HeapTrimmer(loader=lambda: fake)
    assert trimmer.trim() is True
    assert trimmer.trim() is True
    assert calls == [0, 0]
    assert trimmer.trims == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc")
def test_glibcs_malloc_trim_is_found_and_runs() -> None:
    trimmer = heap.HeapTrimmer()
    assert trimmer.available
    trimmer.trim()  # returns whether memory was released: either is right here
    assert trimmer.trims == 1
