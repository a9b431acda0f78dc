"""The bench's kube-apiserver profiler: consecutive slices until stopped, never a silent gap."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from e2e.bench.apiserver_profile import PROFILE_PATH, ApiServerProfiler, write_top


def test_slices_are_written_in_order_until_the_api_server_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = iter([(200, b"slice-0"), (200, b"slice-1"), (403, b"forbidden")])
    asked: list[str] = []
    refused = threading.Event()

    def fetch(path: str) -> tuple[int, bytes]:
        asked.append(path)
        answer = next(answers)
        if answer[0] != 200:
            refused.set()
        return answer

    profiler = ApiServerProfiler(fetch, tmp_path / "profile-run").start()
    assert refused.wait(30)
    paths = profiler.stop()

    assert asked == [PROFILE_PATH] * 3
    assert [p.name for p in paths] == [
        "profile-run-apiserver-0.pb.gz",
        "profile-run-apiserver-1.pb.gz",
    ]
    assert [p.read_bytes() for p in paths] == [b"slice-0", b"slice-1"]
    assert profiler.error is not None and "403" in profiler.error
    assert "kube-apiserver profile" in capsys.readouterr().err


def test_an_unreachable_api_server_is_reported_not_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def fetch(path: str) -> tuple[int, bytes]:
        raise ConnectionRefusedError("connection refused")

    profiler = ApiServerProfiler(fetch, tmp_path / "p").start()
    assert profiler.stop() == []
    assert profiler.error is not None and "connection refused" in profiler.error
    assert "connection refused" in capsys.readouterr().err


def test_stop_ends_the_loop_after_the_slice_under_way(tmp_path: Path) -> None:
    second_started = threading.Event()
    release = threading.Event()
    calls = 0

    def fetch(path: str) -> tuple[int, bytes]:
        nonlocal calls
        calls += 1
        if calls == 2:
            second_started.set()
            assert release.wait(30)
        return 200, f"slice-{calls - 1}".encode()

    profiler = ApiServerProfiler(fetch, tmp_path / "p").start()
    assert second_started.wait(30)
    stopped: list[list[Path]] = []
    stopper = threading.Thread(target=lambda: stopped.append(profiler.stop()))
    stopper.start()
    release.set()
    stopper.join(30)

    assert not stopper.is_alive()
    (paths,) = stopped
    assert len(paths) >= 2  # the slice under way when stop() was called is kept
    assert [p.read_bytes() for p in paths] == [f"slice-{i}".encode() for i in range(len(paths))]
    assert profiler.error is None


def test_no_slices_no_top(tmp_path: Path) -> None:
    assert write_top([], tmp_path / "top.txt") is None
    assert not (tmp_path / "top.txt").exists()
