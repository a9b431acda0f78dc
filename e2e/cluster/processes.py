"""Start, identify and stop the harness' own processes - by pid, never by name.

Every process writes stdout+stderr to its own log file. A process is identified by its pid
together with its start time from /proc, so a stale state file can never make us signal an
unrelated process that happens to reuse the pid.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class ProcessInfo:
    """What is recorded about a started process (JSON-serialisable)."""

    name: str
    pid: int
    start_time: int
    log: str
    argv: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcessInfo:
        return cls(
            name=str(data["name"]),
            pid=int(data["pid"]),
            start_time=int(data["start_time"]),
            log=str(data["log"]),
            argv=[str(a) for a in data["argv"]],
        )


class ManagedProcess:
    """One control-plane process: its argv, its log file, its pid and how to stop it."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        detached: bool = False,
        cpus: Iterable[int] | None = None,
    ) -> None:
        self.name = name
        # Started pinned (e.g. the scheduler under test in the bench's capacity mode): taskset
        # sets the mask and execs the program, so the pid is the program's and every thread
        # it ever starts inherits the mask.
        pin = ["taskset", "--cpu-list", ",".join(str(c) for c in sorted(cpus))] if cpus else []
        self.argv = pin + [str(a) for a in argv]
        self.log_path = log_path
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._detached = detached
        self._popen: subprocess.Popen[bytes] | None = None
        self._start_time = 0
        self._terminated = False

    def start(self) -> ManagedProcess:
        """Launch the process in its own session with output going to its log file.

        Its own session keeps a terminal's Ctrl-C from killing it behind the harness' back;
        unless detached, it also gets SIGKILL if the harness process dies (PDEATHSIG), so a
        crashed or killed test run does not leak a control plane. (SIGKILL, not SIGTERM: an
        apiserver told to shut down after etcd already vanished can hang for minutes.)
        """
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"$ {' '.join(self.argv)}\n".encode())
            log.flush()
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env,
                cwd=self._cwd,
                start_new_session=True,
                # Only prctl() runs in the child before exec, which is async-signal-safe; the
                # thread-safety caveat of preexec_fn concerns arbitrary Python code there.
                preexec_fn=None if self._detached else _die_with_parent,  # noqa: PLW1509
            )
        self._start_time = proc_start_time(self._popen.pid) or 0
        return self

    @property
    def pid(self) -> int:
        if self._popen is None:
            raise RuntimeError(f"{self.name} was not started")
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """Exit status once the process ended, else None."""
        return None if self._popen is None else self._popen.poll()

    def alive(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def wait(self, timeout: float | None = None) -> int | None:
        """Block until the process exits (at most ``timeout`` s); its status, else None."""
        if self._popen is None:
            raise RuntimeError(f"{self.name} was not started")
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def info(self) -> ProcessInfo:
        return ProcessInfo(self.name, self.pid, self._start_time, str(self.log_path), self.argv)

    def terminate(self) -> None:
        """Send SIGTERM once (a second one makes Kubernetes components skip their shutdown)."""
        if self._popen is None or self._terminated or self._popen.poll() is not None:
            return
        self._terminated = True
        with contextlib.suppress(ProcessLookupError):
            self._popen.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL; always reaps the child."""
        if self._popen is None or self._popen.poll() is not None:
            return
        self.terminate()
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                self._popen.kill()
            self._popen.wait()

    def tail(self, lines: int = 40) -> str:
        return tail_file(self.log_path, lines)

    def __repr__(self) -> str:
        pid = self._popen.pid if self._popen else None
        return f"ManagedProcess({self.name!r}, pid={pid}, alive={self.alive()})"


def stop_all(processes: Iterable[ManagedProcess], timeout: float = 15.0) -> None:
    """Stop processes concurrently: signal all, then wait for each, SIGKILL stragglers."""
    procs = [p for p in processes if p.alive()]
    for p in procs:
        p.terminate()
    deadline = time.monotonic() + timeout
    for p in procs:
        p.stop(timeout=max(0.1, deadline - time.monotonic()))


def proc_start_time(pid: int) -> int | None:
    """The process' start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm (field 2) may contain spaces and parentheses; the rest follows the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}


def is_same_process(info: ProcessInfo) -> bool:
    """True if ``info.pid`` still is the very process that was recorded (and not a zombie)."""
    current = proc_start_time(info.pid)
    return current is not None and current == info.start_time and not _is_zombie(info.pid)


def stop_recorded(infos: Sequence[ProcessInfo], timeout: float = 15.0) -> list[str]:
    """Stop processes that this harness started in an earlier invocation (``down``).

    Only pids whose start time still matches the record are signalled. Returns the names of
    the processes that had to be SIGKILLed.
    """
    live = [i for i in infos if is_same_process(i)]
    for info in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(is_same_process(i) for i in live):
        time.sleep(0.1)
    killed = []
    for info in live:
        if is_same_process(info):
            with contextlib.suppress(ProcessLookupError):
                os.kill(info.pid, signal.SIGKILL)
            killed.append(info.name)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(is_same_process(i) for i in live):
        time.sleep(0.05)
    return killed


def tail_file(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a (possibly large) log file."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            block = min(size, max(8192, lines * 400))
            fh.seek(size - block)
            data = fh.read()
    except OSError as exc:
        return f"<cannot read {path}: {exc}>"
    return "\n".join(data.decode(errors="replace").splitlines()[-lines:])


def _die_with_parent() -> None:
    """preexec_fn: ask the kernel to SIGKILL the child when the harness' thread exits."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
