"""The process wiring of the PodGroup sources (scheduler/cmd/app.py): with GenericWorkload on,
a gang plugin's Handle.gangs() watches scheduling.k8s.io/v1beta1 PodGroups too, their changes
are the cluster events `scheduling.k8s.io/PodGroup` (kube-scheduler's name), and the pod
informer reads spec.schedulingGroup; with it off, neither. Nothing is started: the informers'
stores are fed directly."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scheduler import metrics
from scheduler.api.gang import GangSource
from scheduler.cmd.app import App
from scheduler.cmd.options import Options
from scheduler.config.load import parse_config_text
from scheduler.features import FeatureGates
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing.builders import pod_json
from tests.api.kube_pod_groups import kube_pod_group_json
from tests.plugins.coscheduling.test_profile import config


def _app(gates: dict[str, bool]) -> App:
    cfg = parse_config_text(config(("gang-scheduler", 30)), set(in_tree_registry()))
    # Never contacted: nothing is started.
    return App(Options(config=cfg, master="http://127.0.0.1:9", feature_gates=FeatureGates(gates)))


@pytest.fixture
def app_on() -> Iterator[App]:
    app = _app({"GenericWorkload": True})
    yield app
    app.stop()


@pytest.fixture
def app_off() -> Iterator[App]:
    app = _app({})
    yield app
    app.stop()


def _handled(label: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "scheduler_event_handling_duration_seconds_count", {"event": label}
    )
    return value or 0.0


def test_with_the_gate_on_kube_pod_groups_are_watched_and_are_cluster_events(
    app_on: App,
) -> None:
    assert app_on.gangs is not None
    kube = app_on.gangs.informers[GangSource.KUBERNETES]
    assert kube in app_on._informers()
    before = _handled("scheduling.k8s.io/PodGroupAdd")
    kube.store.replace(iter([kube_pod_group_json("g", min_count=2)]), "5")
    assert _handled("scheduling.k8s.io/PodGroupAdd") == before + 1
    pod = app_on.pods.store._transform(
        pod_json("m", scheduler_name="gang-scheduler", pod_group_name="g")
    )
    assert pod is not None and pod.pod_group_name == "g"


def test_with_the_gate_off_only_scheduler_plugins_pod_groups_are_watched(app_off: App) -> None:
    assert app_off.gangs is not None
    assert list(app_off.gangs.informers) == [GangSource.SCHEDULER_PLUGINS]
    pod = app_off.pods.store._transform(
        pod_json("m", scheduler_name="gang-scheduler", pod_group_name="g")
    )
    assert pod is not None and pod.pod_group_name == ""
