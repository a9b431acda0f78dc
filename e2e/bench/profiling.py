"""py-spy sampling of the kube-pysched process, and a plain-text reading of the result.

py-spy attaches to the running scheduler by pid, so the process under test is started exactly
as in an unprofiled run; only the sampling overhead (a ptrace stop per sample) is added.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

SAMPLE_RATE = 100  # per second: enough for a hot-path reading, light on a 2-core machine


def py_spy_binary() -> str:
    beside_python = Path(sys.executable).parent / "py-spy"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("py-spy")
    if found is None:
        raise RuntimeError("py-spy not found: install the dev extras (pip install -e '.[dev]')")
    return found


class PySpy:
    """`py-spy record` on one pid, writing collapsed stacks to `<stem>.txt`."""

    def __init__(self, pid: int, stem: Path) -> None:
        self.pid = pid
        self.collapsed = stem.with_suffix(".txt")
        self.summary = stem.with_suffix(".top.txt")
        self.log = stem.with_suffix(".py-spy.log")
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> PySpy:
        # --gil: only the thread holding the GIL is sampled, so the profile shows where the
        # Python CPU goes, not the threads blocked on the network.
        argv = [py_spy_binary(), "record", "--pid", str(self.pid), "--format", "raw", "--gil"]
        argv += ["--rate", str(SAMPLE_RATE), "--output", str(self.collapsed)]
        with self.log.open("wb") as log:
            self._proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        return self

    def stop(self) -> Path:
        """Ends sampling (py-spy writes its file on SIGINT); returns the summary's path."""
        if self._proc is not None:
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if not self.collapsed.exists():
            self.summary.write_text(f"py-spy wrote no profile; see {self.log}\n")
            return self.summary
        self.summary.write_text(summarize_collapsed(self.collapsed.read_text()))
        return self.summary


def summarize_collapsed(text: str, top: int = 25) -> str:
    """Self and inclusive sample shares per function from py-spy's collapsed stacks."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [f for f in stack.split(";") if f]
        if not frames:
            continue
        # The first frame is the thread ("process 1:\"MainThread\""); keep functions only.
        functions = [f for f in frames if "(" in f]
        if not functions:
            continue
        total += count
        own[functions[-1]] += count
        for frame in set(functions):
            inclusive[frame] += count
    if total == 0:
        return "no samples\n"
    lines = [f"{total} samples at {SAMPLE_RATE}/s", "", "self %  function"]
    lines += [f"{100 * n / total:6.1f}  {f}" for f, n in own.most_common(top)]
    lines += ["", "incl %  function"]
    lines += [f"{100 * n / total:6.1f}  {f}" for f, n in inclusive.most_common(top)]
    return "\n".join(lines) + "\n"
