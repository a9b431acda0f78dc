"""CPU profiles of kube-apiserver over a measure window, read from its /debug/pprof endpoint.

The two schedulers' windows can differ in the API server's CPU per pod for the same requests;
a profile of each window says where it goes. Go profiles for a duration fixed in advance, so
consecutive SLICE_SECONDS slices cover the window and `go tool pprof` merges them.
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from e2e.cluster.build import _go

SLICE_SECONDS = 5
PROFILE_PATH = f"/debug/pprof/profile?seconds={SLICE_SECONDS}"
TOP_NODES = 40

#: GET a path from the API server: (HTTP status, body); raises OSError or HTTPException.
Fetch = Callable[[str], tuple[int, bytes]]


class ApiServerProfiler:
    """Writes `<stem>-apiserver-<n>.pb.gz`, one per slice, from start() until stop()."""

    def __init__(self, fetch: Fetch, stem: Path) -> None:
        self._fetch = fetch
        self._stem = stem
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="bench-apiserver-profile", daemon=True
        )
        self.paths: list[Path] = []
        self.error: str | None = None

    def start(self) -> ApiServerProfiler:
        self._thread.start()
        return self

    def stop(self) -> list[Path]:
        """Waits for the slice under way (a profile cannot be cut short) and returns them all."""
        self._stop.set()
        self._thread.join(SLICE_SECONDS + 60)
        if self.error is not None:
            print(f"warning: kube-apiserver profile: {self.error}", file=sys.stderr, flush=True)
        return self.paths

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                status, body = self._fetch(PROFILE_PATH)
            except (OSError, http.client.HTTPException) as err:
                self.error = f"GET {PROFILE_PATH}: {err}"
                return
            if status != 200:
                self.error = f"GET {PROFILE_PATH}: the API server answered {status}"
                return
            path = self._stem.with_name(f"{self._stem.name}-apiserver-{len(self.paths)}.pb.gz")
            path.write_bytes(body)
            self.paths.append(path)


def write_top(paths: list[Path], out: Path) -> Path | None:
    """`go tool pprof -top` of the merged slices into `out` (flat and cumulative CPU per
    function); None with a warning if Go or pprof cannot read them (the slices stay)."""
    if not paths:
        return None
    try:
        result = subprocess.run(
            [_go(), "tool", "pprof", "-top", f"-nodecount={TOP_NODES}", *map(str, paths)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as err:
        print(f"warning: could not read the kube-apiserver profile: {err}", file=sys.stderr)
        return None
    if result.returncode != 0:
        print(
            f"warning: go tool pprof failed ({result.returncode}): {result.stderr[-500:]}",
            file=sys.stderr,
        )
        return None
    out.write_text(result.stdout)
    return out
