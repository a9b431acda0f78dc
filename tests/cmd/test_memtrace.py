"""The opt-in memory trace: off without its variable; figures and snapshots when asked."""

from __future__ import annotations

import json
import os
import signal
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.cmd import memtrace


@pytest.fixture
def restore_signal() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGUSR2)
    yield
    signal.signal(signal.SIGUSR2, previous)
    tracemalloc.stop()


def test_off_unless_the_variable_is_set(
    monkeypatch: pytest.MonkeyPatch, restore_signal: None
) -> None:
    monkeypatch.delenv(memtrace.DIR_ENV, raising=False)
    assert memtrace.install_from_env() is None
    assert not tracemalloc.is_tracing()
    assert signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL


def test_sigusr2_writes_figures_and_a_snapshot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, restore_signal: None
) -> None:
    monkeypatch.setenv(memtrace.DIR_ENV, str(tmp_path / "trace"))
    monkeypatch.setenv(memtrace.FRAMES_ENV, "2")
    assert memtrace.install_from_env() is not None
    assert tracemalloc.is_tracing()
    os.kill(os.getpid(), signal.SIGUSR2)  # the handler runs before kill() returns to Python
    stats = json.loads((tmp_path / "trace" / "stats-1.json").read_text())
    assert stats["rss"] > 0 and stats["traced"] > 0 and stats["threads"] >= 1
    snapshot = tracemalloc.Snapshot.load(str(tmp_path / "trace" / "snapshot-1.pickle"))
    assert snapshot.traceback_limit == 2


def test_frames_zero_writes_figures_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, restore_signal: None
) -> None:
    monkeypatch.setenv(memtrace.DIR_ENV, str(tmp_path))
    monkeypatch.setenv(memtrace.FRAMES_ENV, "0")
    trace = memtrace.install_from_env()
    assert trace is not None and not tracemalloc.is_tracing()
    trace.dump()
    trace.dump()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stats-1.json", "stats-2.json"]
    assert json.loads((tmp_path / "stats-2.json").read_text())["traced"] == 0
