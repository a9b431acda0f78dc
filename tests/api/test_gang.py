"""scheduling.x-k8s.io/v1alpha1 PodGroups and the Gang they become."""

from __future__ import annotations

import pytest

from scheduler.api.gang import (
    GangParseError,
    GangSource,
    gang_from_pod_group,
    parse_pod_group,
)
from tests.plugins.coscheduling.objects import pod_group_json


def test_parse_pod_group_and_its_gang() -> None:
    raw = pod_group_json(
        "pg", 3, min_resources={"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "2"}, timeout=20
    )
    raw["status"] = {
        "phase": "Scheduling",
        "running": 1,
        "succeeded": 0,
        "failed": 2,
        "occupiedBy": "uid-1",
        "scheduleStartTime": "2026-01-01T00:01:00Z",
    }
    group = parse_pod_group(raw)
    assert (group.key, group.min_member, group.schedule_timeout_seconds) == ("default/pg", 3, 20)
    assert group.status.phase == "Scheduling"
    assert (group.status.running, group.status.failed) == (1, 2)
    assert group.status.schedule_start_time == group.created + 60
    gang = gang_from_pod_group(group)
    assert gang.source == GangSource.SCHEDULER_PLUGINS
    assert gang.key == "default/pg"
    assert gang.min_resources is not None
    assert gang.min_resources.milli_cpu == 1500
    assert gang.min_resources.memory == 1 << 30
    assert gang.min_resources.scalar == {"nvidia.com/gpu": 2}
    assert gang.min_resources.allowed_pod_number == 3
    assert gang.min_resource_names == ("cpu", "memory", "nvidia.com/gpu", "pods")
    assert gang.schedule_timeout == 20.0


def test_a_group_without_min_resources_or_min_member() -> None:
    gang = gang_from_pod_group(parse_pod_group(pod_group_json("pg", 0)))
    assert gang.min_member == 1
    assert gang.min_resources is None
    assert gang.schedule_timeout is None


def test_a_bad_min_resources_quantity_is_a_parse_error() -> None:
    with pytest.raises(GangParseError, match=r"spec\.minResources"):
        parse_pod_group(pod_group_json("pg", 1, min_resources={"cpu": "lots"}))
