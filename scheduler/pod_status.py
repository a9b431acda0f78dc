"""The status patch kube-scheduler sends after a failed attempt: PodScheduled=False, and the
nominated node when preemption set or cleared one. Nothing is sent when nothing changes."""

from __future__ import annotations

from typing import Any

from scheduler.api.conditions import condition_update
from scheduler.api.objects import Pod
from scheduler.framework.types import NominatingInfo, NominatingMode


def pod_scheduled_condition_patch(
    pod: Pod,
    reason: str,
    message: str,
    nominating: NominatingInfo | None,
    now: float,
) -> dict[str, Any] | None:
    """A strategic merge patch for pods/status, or None when the status already says this."""
    status: dict[str, Any] = {}
    condition = condition_update(pod, "PodScheduled", "False", reason, message, now)
    if condition is not None:
        condition["lastProbeTime"] = None
        status["conditions"] = [condition]
    if (
        nominating is not None
        and nominating.mode == NominatingMode.OVERRIDE
        and pod.nominated_node_name != nominating.nominated_node_name
    ):
        status["nominatedNodeName"] = nominating.nominated_node_name or None
    if not status:
        return None
    return {"status": status}
