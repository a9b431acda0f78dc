"""Talk to the DRA oracle: upstream's structured allocator answering one case per JSON line.

One process serves any number of cases (it answers each line as soon as it is read), so a
differential run of hundreds of cases pays the start-up once.

Upstream's answer may depend on chance. With the consumableCapacity and bindingConditions gates
both off, NewAllocator picks its "stable" allocator, whose GatherPools collects pools in a Go
map: the order in which pools are searched (and with it the device picked, or whether a CEL
error is met before a fit) is a random rotation of the pools per call. (The "incubating"
allocator that v1.37's default gates select sorts pools by driver and pool name, those with
binding conditions last.) ``Oracle(runs=N)`` allocates each case N times and lists the other
answers it saw under ``"alternatives"``; any of them is upstream's behaviour.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from e2e.cluster.dra_oracle import ensure_dra_oracle

JSON = dict[str, Any]


class OracleError(RuntimeError):
    """The oracle process died or answered something that is not an answer."""


class Oracle:
    """A running ``dra-oracle``; use as a context manager (``with Oracle() as oracle``)."""

    def __init__(self, binary: Path | None = None, *, runs: int = 1) -> None:
        self.binary = binary or ensure_dra_oracle()
        self.runs = runs
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Oracle:
        self._proc = subprocess.Popen(
            [str(self.binary), f"-runs={self.runs}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close stdin and wait for the process, which exits at end of input."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    def allocate(self, case: JSON) -> JSON:
        """Upstream's answer: ``{"allocations": [...]}``, ``{"allocations": None}`` or
        ``{"error": "..."}``."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise OracleError("the oracle is not running (use it as a context manager)")
        try:
            proc.stdin.write(json.dumps(case, separators=(",", ":")) + "\n")
            proc.stdin.flush()
        except BrokenPipeError as exc:
            raise OracleError(f"the oracle exited: {self._stderr()}") from exc
        line = proc.stdout.readline()
        if not line:
            raise OracleError(f"the oracle exited without an answer: {self._stderr()}")
        answer = json.loads(line)
        if not isinstance(answer, dict) or not ("allocations" in answer or "error" in answer):
            raise OracleError(f"not an answer: {line.strip()}")
        return answer

    def allocate_all(self, cases: Iterable[JSON]) -> list[JSON]:
        """Answers for several cases, in order."""
        return [self.allocate(case) for case in cases]

    def _stderr(self) -> str:
        proc = self._proc
        if proc is None or proc.stderr is None:
            return ""
        proc.wait(timeout=10)
        return proc.stderr.read().strip() or f"exit code {proc.returncode}"


def answers_of(answer: JSON) -> list[JSON]:
    """The oracle's answer and its alternatives (each without further alternatives)."""
    first = {key: value for key, value in answer.items() if key != "alternatives"}
    return [first, *answer.get("alternatives", [])]


def answer_kind(answer: JSON) -> str:
    """``satisfiable``, ``unsatisfiable`` or ``error``: what the differential test compares
    first (error messages may differ in wording; the kind may not)."""
    if "error" in answer:
        return "error"
    return "unsatisfiable" if answer.get("allocations") is None else "satisfiable"


def timed_out(answer: JSON) -> bool:
    """Upstream gave up on the case at its per-case budget (kube-scheduler's filterTimeout,
    10 s): its exhaustive search met a combination too large, so there is no answer to compare."""
    return "context deadline exceeded" in str(answer.get("error", ""))
