"""How every run of one invocation is made: the command line's mode flags, in one value."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS_DIR = REPO_ROOT / "bench-results"
DEFAULT_DEADLINE = 900.0


@dataclass(frozen=True)
class RunOptions:
    """The flags of `python -m e2e.bench` that shape each run (each field is its flag's dest)."""

    #: seconds to wait for the measured pods; pods still unbound count as unscheduled
    deadline: float = DEFAULT_DEADLINE
    #: the folder for the JSON records, the logs and the profiles
    results_dir: Path = RESULTS_DIR
    #: sample kube-pysched with py-spy during each run
    profile: bool = False
    #: record kube-apiserver's CPU profile over each measure window
    apiserver_profile: bool = False
    #: every measured pod created before the scheduler starts; the drain rate is measured
    backlog: bool = False
    #: backlog mode, pinned: the control plane on one CPU, the scheduler on another
    capacity: bool = False
    #: kwok leaves the measured pods as the scheduler left them (bound, Pending)
    pending_pods: bool = False
    #: the measured pods created at this steady rate per second
    create_qps: float | None = None
    #: every scheduler's -v (None: each scheduler's own)
    verbosity: int | None = None
    #: rounds over all the workloads
    repeat: int = 1
    #: the command line, recorded in every record
    command: str = ""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunOptions:
        """The options of parsed arguments whose dests are the field names."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)})

    @property
    def drains_backlog(self) -> bool:
        """Backlog and capacity mode: the measured pods exist before the scheduler starts."""
        return self.backlog or self.capacity

    @property
    def mode(self) -> str:
        """live, backlog or capacity (what a record's `mode` says)."""
        return "capacity" if self.capacity else "backlog" if self.backlog else "live"


DEFAULT_OPTIONS = RunOptions()
