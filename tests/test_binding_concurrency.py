"""Bindings in flight: kube-scheduler binds each pod in a goroutine of its own, so kube-pysched's
pool must let a burst of bindings wait in the API server together, not 16 at a time."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.framework.registry import PluginSpec
from scheduler.framework.status import Status
from scheduler.scheduler import BINDING_WORKERS
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import PROFILE, Harness, registry


class GatheringBinder:
    """Binds only once BINDING_WORKERS bindings are waiting at the same time."""

    name = "Gathering"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.together = threading.Barrier(BINDING_WORKERS, timeout=10)

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            self.together.wait()
        except threading.BrokenBarrierError:
            return Status.as_error(RuntimeError("fewer bindings were in flight at once"))
        self.handle.api.bind(pod, node_name)
        return None


@pytest.fixture
def h() -> Iterator[Harness]:
    plugins = registry().merge(
        {"Gathering": PluginSpec(lambda args, handle: GatheringBinder(handle))}
    )
    enabled = (PluginRef("Sort"), PluginRef("CpuFit"), PluginRef("Gathering"))
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    harness = Harness(spec, plugins=plugins, binding_workers=None)
    yield harness
    harness.close()


def test_a_burst_of_bindings_is_in_flight_at_once(h: Harness) -> None:
    assert BINDING_WORKERS >= 64
    h.add_node(make_node("a", cpu="1000"))
    for i in range(BINDING_WORKERS):
        h.add_pod(make_pod(f"p{i}", cpu="1"))
        h.schedule_next()
    h.api.wait_for(lambda: len(h.api.binds) == BINDING_WORKERS)
    assert h.api.status_patches == []
