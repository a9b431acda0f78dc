"""PodGroups and gang members for the Coscheduling tests."""

from __future__ import annotations

from typing import Any

from scheduler.api.gang import POD_GROUP_LABEL, PodGroup, parse_pod_group
from scheduler.api.objects import Pod
from scheduler.framework.types import QueuedPodInfo
from scheduler.testing import make_pod


def pod_group_json(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    created: str = "2026-01-01T00:00:00Z",
    min_resources: dict[str, str] | None = None,
    timeout: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = min_resources
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pg-{name}",
            "resourceVersion": "1",
            "creationTimestamp": created,
        },
        "spec": spec,
    }


def pod_group(name: str, min_member: int, **kwargs: Any) -> PodGroup:
    return parse_pod_group(pod_group_json(name, min_member, **kwargs))


def member(name: str, group: str, **kwargs: Any) -> Pod:
    labels = {POD_GROUP_LABEL: group, **kwargs.pop("labels", {})}
    return make_pod(name, uid=f"uid-{name}", labels=labels, **kwargs)


def queued(pod: Pod, timestamp: float = 0.0) -> QueuedPodInfo:
    return QueuedPodInfo(pod, timestamp=timestamp, initial_attempt_timestamp=timestamp)
