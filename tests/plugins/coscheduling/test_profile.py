"""A profile with Coscheduling loads as scheduler-plugins' sample configuration writes it, and
the one shared queue is then sorted by it; QueueSort must stay the same in every profile."""

from __future__ import annotations

import pytest

from scheduler.config import ConfigError
from scheduler.config.load import parse_config_text
from scheduler.features import FeatureGates
from scheduler.framework.runtime import FrameworkServices
from scheduler.plugins.registry import in_tree_registry
from scheduler.profiles import build_frameworks, build_queue
from scheduler.testing import FakeApi, FakeRecorder
from scheduler.testing.handle import FakeHandle

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

PROFILE = """
  - schedulerName: {name}
    plugins:
      multiPoint:
        enabled:
        - name: Coscheduling
      queueSort:
        enabled:
        - name: Coscheduling
        disabled:
        - name: "*"
    pluginConfig:
    - name: Coscheduling
      args:
        permitWaitingTimeSeconds: {wait}
        podGroupBackoffSeconds: 10
"""


def config(*profiles: tuple[str, int]) -> str:
    body = "profiles:" + "".join(PROFILE.format(name=n, wait=w) for n, w in profiles)
    return HEAD + body


def test_a_profile_with_coscheduling_loads_and_sorts_the_queue() -> None:
    cfg = parse_config_text(config(("gang-scheduler", 30)), set(in_tree_registry()))
    services = FrameworkServices(
        snapshot=FakeHandle().snapshot,
        api=FakeApi(),
        event_recorder=FakeRecorder(),
        features=FeatureGates(),
    )
    frameworks = build_frameworks(cfg, in_tree_registry(), services)
    fwk = frameworks["gang-scheduler"]
    plugin = fwk.plugins["Coscheduling"]
    assert fwk.queue_sort() is plugin
    assert plugin.args.permit_waiting_time_seconds == 30
    assert plugin.args.pod_group_backoff_seconds == 10
    names = {p.name for p in fwk.pre_enqueue_plugins}
    assert "Coscheduling" in names
    assert plugin in fwk.permit_plugins and plugin in fwk.reserve_plugins
    assert plugin in fwk.post_filter_plugins and plugin in fwk.pre_filter_plugins
    queue = build_queue(frameworks, cfg, FeatureGates(), 300.0)
    try:
        assert queue is not None
    finally:
        queue.close()
        for f in frameworks.values():
            f.close()


def test_every_profile_must_sort_with_the_same_coscheduling_args() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config_text(config(("a", 30), ("b", 60)), set(in_tree_registry()))
    assert any("queueSort must be the same for all profiles" in e for e in err.value.errors)


def test_coscheduling_is_not_in_the_default_profile() -> None:
    cfg = parse_config_text(HEAD, set(in_tree_registry()))
    spec = cfg.profiles[0].to_spec()
    enabled = {ref.name for point in spec.plugins.values() for ref in point.enabled}
    assert "PrioritySort" in enabled
    assert "Coscheduling" not in enabled
