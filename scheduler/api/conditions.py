"""Pod condition updates as apipod.UpdatePodCondition decides them: nothing when the pod already
has the condition with the same status, reason and message; a new lastTransitionTime only when
the status changes."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.parse import format_time


def condition_update(
    pod: Pod, type_: str, status: str, reason: str, message: str, now: float
) -> dict[str, Any] | None:
    """The condition entry for a pods/status strategic merge patch, or None if unchanged."""
    current = pod.condition(type_)
    if (
        current is not None
        and current.status == status
        and current.reason == reason
        and current.message == message
    ):
        return None
    condition: dict[str, Any] = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
    }
    if current is None or current.status != status:
        condition["lastTransitionTime"] = format_time(now)
    return condition
