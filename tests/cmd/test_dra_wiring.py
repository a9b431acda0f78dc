"""The process wiring of DynamicResources (scheduler/cmd/app.py): by default (the
PyschedDynamicResources switch on) the default profile's DynamicResources watches the four
resource.k8s.io kinds, a claim's arrival reaches the claim tracker and is a cluster event, and a
DeviceTaintRule's is a ResourceSlice update; with the switch off nothing of resource.k8s.io is
watched. Nothing is started: the informers' stores are fed directly."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scheduler import metrics
from scheduler.cmd.app import App
from scheduler.cmd.options import Options
from scheduler.config.load import parse_config_text
from scheduler.features import FeatureGates
from scheduler.plugins.registry import DRA_SWITCH, in_tree_registry

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: kube-pysched
"""


def _app(gates: dict[str, bool]) -> App:
    cfg = parse_config_text(CONFIG, set(in_tree_registry()))
    # Never contacted: nothing is started.
    return App(Options(config=cfg, master="http://127.0.0.1:9", feature_gates=FeatureGates(gates)))


@pytest.fixture
def app_on() -> Iterator[App]:
    app = _app({})
    yield app
    app.stop()


def _handled(label: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "scheduler_event_handling_duration_seconds_count", {"event": label}
    )
    return value or 0.0


def test_default_watches_resource_kinds_and_feeds_the_tracker(app_on: App) -> None:
    assert app_on.dra is not None
    informers, manager = app_on.dra
    assert sorted(informers.informers) == [
        "resource.k8s.io/DeviceClass",
        "resource.k8s.io/DeviceTaintRule",
        "resource.k8s.io/ResourceClaim",
        "resource.k8s.io/ResourceSlice",
    ]
    assert all(inf in app_on._informers() for inf in informers.informers.values())
    claims = informers.informers["resource.k8s.io/ResourceClaim"]
    before = _handled("resource.k8s.io/ResourceClaimAdd")
    claim = {
        "metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "3"},
        "spec": {"devices": {"requests": []}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "r", "driver": "d", "pool": "p", "device": "g"}]
                }
            }
        },
    }
    claims.store.replace(iter([claim]), "3")
    assert _handled("resource.k8s.io/ResourceClaimAdd") == before + 1
    assert manager.claims.gather_allocated_state().devices == {("d", "p", "g")}
    rules = informers.informers["resource.k8s.io/DeviceTaintRule"]
    before = _handled("resource.k8s.io/ResourceSliceUpdate")
    rule = {
        "metadata": {"name": "r", "resourceVersion": "4"},
        "spec": {"deviceSelector": {"driver": "d"}, "taint": {"key": "k", "effect": "NoSchedule"}},
    }
    rules.store.replace(iter([rule]), "4")
    assert _handled("resource.k8s.io/ResourceSliceUpdate") == before + 1


def test_switch_off_watches_nothing_of_resource_k8s_io() -> None:
    app = _app({DRA_SWITCH: False})
    try:
        assert app.dra is None
    finally:
        app.stop()
