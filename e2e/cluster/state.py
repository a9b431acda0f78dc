"""The state file of a detached control plane (``python -m e2e.cluster up``).

It records exactly which processes ``down`` may stop (pid + start time) and where the
kubeconfig and run directory are, so separate CLI invocations can find the cluster.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.cluster.build import cache_root
from e2e.cluster.processes import ProcessInfo


def state_file() -> Path:
    """Path of the single detached cluster's state ($KUBE_PYSCHED_STATE overrides it)."""
    override = os.environ.get("KUBE_PYSCHED_STATE")
    return Path(override) if override else cache_root() / "state" / "cluster.json"


@dataclass
class ClusterState:
    """Everything a later ``status``/``down`` needs to know about a running cluster."""

    workdir: str
    kubeconfig: str
    server: str
    bin_dir: str
    ports: dict[str, int]
    processes: list[ProcessInfo] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "workdir": self.workdir,
            "kubeconfig": self.kubeconfig,
            "server": self.server,
            "bin_dir": self.bin_dir,
            "ports": self.ports,
            "processes": [p.to_dict() for p in self.processes],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterState:
        return cls(
            workdir=str(data["workdir"]),
            kubeconfig=str(data["kubeconfig"]),
            server=str(data["server"]),
            bin_dir=str(data["bin_dir"]),
            ports={str(k): int(v) for k, v in data["ports"].items()},
            processes=[ProcessInfo.from_dict(p) for p in data["processes"]],
        )


def save(state: ClusterState, path: Path | None = None) -> Path:
    """Write the state atomically (a reader never sees half a file)."""
    path = path or state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.to_dict(), indent=2) + "\n")
    tmp.replace(path)
    return path


def load(path: Path | None = None) -> ClusterState | None:
    """The recorded state, or None when no detached cluster is recorded."""
    path = path or state_file()
    try:
        return ClusterState.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None


def clear(path: Path | None = None) -> None:
    (path or state_file()).unlink(missing_ok=True)
