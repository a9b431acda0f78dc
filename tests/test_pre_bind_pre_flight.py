"""PreBindPreFlight: a binding cycle whose PreBind has work runs on a thread of its own, so
slow PreBinds (VolumeBinding waits up to bindTimeoutSeconds) never hold the binding pool."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.framework.registry import PluginSpec
from scheduler.framework.status import Code, Status
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import PROFILE, Harness, registry


class SlowPreBind:
    """PreBind work (a wait on `release`) for pods labelled slow; Skip for the others."""

    name = "Slow"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.pre_bound: list[str] = []
        self.threads: dict[str, str] = {}

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if pod.labels.get("flight") == "broken":
            return Status(Code.ERROR, "no flight")
        return None if pod.labels.get("slow") else Status(Code.SKIP)

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.pre_bound.append(pod.name)
        self.threads[pod.name] = threading.current_thread().name
        if not self.release.wait(timeout=10):
            return Status(Code.ERROR, "never released")
        return None


@pytest.fixture
def slow() -> SlowPreBind:
    return SlowPreBind()


@pytest.fixture
def h(slow: SlowPreBind) -> Iterator[Harness]:
    plugins = registry().merge({"Slow": PluginSpec(lambda args, handle: slow)})
    enabled = (PluginRef("Sort"), PluginRef("CpuFit"), PluginRef("Binder"), PluginRef("Slow"))
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    harness = Harness(spec, plugins=plugins)
    yield harness
    slow.release.set()
    harness.close()


def test_slow_pre_binds_do_not_hold_the_binding_pool(h: Harness, slow: SlowPreBind) -> None:
    h.add_node(make_node("a", cpu="64"))
    # More slow pods than the harness's 2 binding workers, then one without PreBind work.
    for i in range(4):
        h.add_pod(make_pod(f"slow{i}", cpu="1", labels={"slow": "yes"}))
        h.schedule_next()
    h.add_pod(make_pod("fast", cpu="1"))
    h.schedule_next()
    h.api.wait_for(lambda: "default/fast" in h.api.binds)
    assert "fast" not in slow.pre_bound  # Skip in pre-flight: its PreBind did not run
    assert set(h.api.binds) == {"default/fast"}
    assert all(name.startswith("prebind default/slow") for name in slow.threads.values())
    slow.release.set()
    h.api.wait_for(lambda: len(h.api.binds) == 5)


def test_a_pre_flight_error_fails_the_binding_cycle(h: Harness) -> None:
    h.add_node(make_node("a", cpu="4"))
    h.add_pod(make_pod("p", cpu="1", labels={"flight": "broken"}))
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == 1)
    assert h.api.binds == {}
    assert h.recorder.events[-1][2] == 'running PreBindPreFlight "Slow": no flight'
    assert h.cache.pod_count() == 0
