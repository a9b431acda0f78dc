"""/debug/pprof/profile?seconds=N: a CPU profile of the running process, as kube-scheduler's.

Go's runtime writes pprof; no maintained Python sampling profiler writes that format. py-spy
(a maintained sampling profiler) samples every thread of this process from outside it, by pid,
at 100 Hz, without pausing it (--nonblocking), and writes speedscope JSON, which speedscope (and
other flame-graph viewers) open; `format=collapsed` gives folded stacks (flamegraph.pl,
speedscope) instead. In-process samplers either see one thread only or trace every call.
As Go's handler: seconds missing, unparsable or not positive means 30, and one profile at a
time (a second concurrent request is 500).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs

DEFAULT_SECONDS = 30
MAX_SECONDS = 3600
RATE_HZ = 100
FORMATS = {
    "speedscope": ("speedscope", "application/json", "profile.speedscope.json"),
    "collapsed": ("raw", "text/plain; charset=utf-8", "profile.folded.txt"),
}
TEXT = "text/plain; charset=utf-8"

_busy = threading.Lock()


@dataclass(frozen=True)
class Result:
    code: int
    content_type: str
    body: bytes
    filename: str = ""


def _py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def _seconds(query: dict[str, list[str]]) -> int:
    try:
        seconds = int(query.get("seconds", [""])[0])
    except ValueError:
        return DEFAULT_SECONDS
    return seconds if seconds > 0 else DEFAULT_SECONDS


def cpu_profile(query_string: str, pid: int | None = None) -> Result:
    """Samples `pid` (this process) for the requested seconds; blocks that long."""
    query = parse_qs(query_string, keep_blank_values=True)
    seconds = _seconds(query)
    if seconds > MAX_SECONDS:
        return Result(400, TEXT, f"seconds must be at most {MAX_SECONDS}\n".encode())
    name = query.get("format", ["speedscope"])[0] or "speedscope"
    if name not in FORMATS:
        known = ", ".join(FORMATS)
        return Result(400, TEXT, f"unknown format {name!r}: one of {known}\n".encode())
    py_spy = _py_spy()
    if py_spy is None:
        return Result(500, TEXT, b"Could not enable CPU profiling: py-spy is not installed\n")
    if not _busy.acquire(blocking=False):
        return Result(500, TEXT, b"Could not enable CPU profiling: cpu profiling already in use\n")
    try:
        return _record(py_spy, pid or os.getpid(), seconds, name)
    finally:
        _busy.release()


def _record(py_spy: str, pid: int, seconds: int, name: str) -> Result:
    py_spy_format, content_type, filename = FORMATS[name]
    with tempfile.TemporaryDirectory(prefix="kube-pysched-profile-") as directory:
        out = Path(directory) / filename
        argv = [
            py_spy,
            "record",
            "--pid",
            str(pid),
            "--duration",
            str(seconds),
            "--rate",
            str(RATE_HZ),
            "--format",
            py_spy_format,
            "--output",
            str(out),
            "--nonblocking",
        ]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=seconds + 30, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            return Result(500, TEXT, f"Could not enable CPU profiling: {err}\n".encode())
        if done.returncode != 0 or not out.exists():
            detail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            message = f"Could not enable CPU profiling: py-spy: {detail[0]}\n"
            return Result(500, TEXT, message.encode())
        return Result(200, content_type, out.read_bytes(), filename)
