"""How every run of one invocation is made: the command line's mode flags, in one value.

Each field with a `flag` is a command-line flag of `python -m e2e.bench` (its help is here and
nowhere else); `add_flags` puts them on the parser and `from_args` reads them back.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS_DIR = REPO_ROOT / "bench-results"


def flag(default: Any, help: str, **argparse_options: Any) -> Any:
    """A field that is also a flag (`--<name with dashes>`, or `flag=`)."""
    return field(default=default, metadata={"help": help, **argparse_options})


@dataclass(frozen=True)
class RunOptions:
    """The flags that shape each run, in the order `--help` lists them."""

    deadline: float = flag(
        900.0,
        "seconds to wait for the measured pods; pods still unbound count as unscheduled",
        type=float,
    )
    results_dir: Path = flag(  # noqa: RUF009 (a Path is immutable)
        RESULTS_DIR, "folder for the JSON", flag="--results", metavar="RESULTS", type=Path
    )
    backlog: bool = flag(
        False, "create every measured pod before the scheduler starts and measure the drain rate"
    )
    capacity: bool = flag(
        False,
        "backlog mode with the control plane and this harness pinned to one CPU, the "
        "scheduler to another, and kwok leaving the pods alone: the scheduler's own drain rate",
    )
    pending_pods: bool = flag(
        False,
        "kwok leaves the measured pods as the scheduler left them (bound, Pending), as in "
        "scheduler_perf, which runs no kubelet: no Running status patch per pod lands in one "
        "scheduler's window and after the other's",
    )
    create_qps: float | None = flag(
        None,
        "create the measured pods at a steady N per second (a monotonic-clock schedule) "
        "instead of as fast as the API server takes them",
        type=float,
        metavar="N",
    )
    repeat: int = flag(
        1,
        "run every pair N times (rounds over all the workloads); the report adds each "
        "ratio's median over the rounds",
        type=int,
        metavar="N",
    )
    verbosity: int | None = flag(
        None,
        "run every scheduler with -v=N (2 logs each failed attempt and preemption, in the "
        "results folder's logs/); default: each scheduler's own",
        type=int,
        metavar="N",
    )
    pysched_args: tuple[str, ...] | None = flag(
        None,
        "one more argument for kube-pysched's command line, e.g. "
        "--pysched-arg=--explain-max-pods=0 (repeatable)",
        flag="--pysched-arg",
        action="append",
        metavar="ARG",
    )
    #: the command line, recorded in every record
    command: str = ""

    def __post_init__(self) -> None:
        """Refuses flags that contradict each other or are out of range."""
        if self.verbosity is not None and self.verbosity < 0:
            raise ValueError("--verbosity must be 0 or more")
        if self.repeat < 1:
            raise ValueError("--repeat must be 1 or more")
        if self.create_qps is not None and self.create_qps <= 0:
            raise ValueError("--create-qps must be positive")
        if self.create_qps is not None and self.drains_backlog:
            raise ValueError("--create-qps paces live runs, not --backlog or --capacity")
        if self.pending_pods and self.capacity:
            raise ValueError(
                "--capacity already leaves the pods Pending; --pending-pods is not for it"
            )

    @classmethod
    def add_flags(cls, parser: argparse.ArgumentParser) -> None:
        for f in fields(cls):
            if "help" in f.metadata:
                options = dict(f.metadata)
                name = options.pop("flag", "--" + f.name.replace("_", "-"))
                if isinstance(f.default, bool):
                    options["action"] = "store_true"
                else:
                    options["default"] = f.default
                parser.add_argument(name, dest=f.name, **options)

    @classmethod
    def from_args(cls, args: argparse.Namespace, command: str) -> RunOptions:
        flags = {f.name: getattr(args, f.name) for f in fields(cls) if "help" in f.metadata}
        if flags["pysched_args"] is not None:  # argparse appends to a list
            flags["pysched_args"] = tuple(flags["pysched_args"])
        return cls(**flags, command=command)

    @property
    def drains_backlog(self) -> bool:
        """Backlog and capacity mode: the measured pods exist before the scheduler starts."""
        return self.backlog or self.capacity

    @property
    def mode(self) -> str:
        """live, backlog or capacity (what a record's `mode` says)."""
        return "capacity" if self.capacity else "backlog" if self.backlog else "live"


DEFAULT_OPTIONS = RunOptions()
