"""Pods that wait at Permit in a simulation: the binding cycle is parked until a sibling's
Permit allows the pod, or the fake clock passes the Permit timeout and the pod goes back to
the queue; either way the run ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.api.objects import Pod
from scheduler.framework import CycleState, Handle
from scheduler.framework.interface import WaitingPod
from scheduler.framework.registry import PluginSpec
from scheduler.framework.status import Code, Status
from scheduler.logging import reset_logging
from scheduler.plugins.registry import full_registry
from scheduler.simulate.whatif import WhatIf, simulate
from tests.simulate.test_simulate import node, pod, write

TIMEOUT = 30.0


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    yield
    reset_logging()


class Pair:
    """Permit: a pod waits until a second one arrives, then both are allowed."""

    name = "Pair"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        waiting: list[WaitingPod] = []
        self.handle.iterate_over_waiting_pods(waiting.append)
        if not waiting:
            return Status(Code.WAIT, "waiting for a pair"), TIMEOUT
        for other in waiting:
            other.allow(self.name)
        return None, 0.0


def run_pair(tmp_path: Path, *pods: dict[str, Any]) -> dict[str, Any]:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "kube-pysched",
                "plugins": {"permit": {"enabled": [{"name": "Pair"}]}},
            }
        ],
    }
    config_path = tmp_path / "pair.yaml"
    config_path.write_text(yaml.safe_dump(config))
    cluster = write(tmp_path / "c.yaml", node("a"), *pods)
    registry = full_registry().merge({"Pair": PluginSpec(lambda args, handle: Pair(handle))})
    report = simulate(WhatIf(snapshot=[cluster], configs=[str(config_path)]), registry)
    out: dict[str, Any] = report.to_json()["configs"][0]
    return out


def test_a_waiting_pod_is_allowed_by_the_next_one(tmp_path: Path) -> None:
    cfg = run_pair(tmp_path, pod("p1", "1"), pod("p2", "1"))
    assert cfg["placed"] == {"default/p1": "a", "default/p2": "a"}
    assert cfg["pending"] == []


def test_a_pod_waiting_alone_times_out_and_stays_pending(tmp_path: Path) -> None:
    cfg = run_pair(tmp_path, pod("alone", "1"))
    assert cfg["placed"] == {}
    [pending] = cfg["pending"]
    assert pending["pod"] == "default/alone"
    assert f"rejected due to timeout after waiting {TIMEOUT}s at plugin Pair" in pending["message"]
