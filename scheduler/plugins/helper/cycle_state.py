"""Reading back what a plugin's PreFilter or PreScore wrote in the cycle state."""

from __future__ import annotations

from typing import TypeVar

from scheduler.framework import Code, CycleState, Status

T = TypeVar("T")


def read_state(state: CycleState, key: str, kind: type[T], error: str) -> T | Status:
    """The `kind` value stored under `key`, or an Error status worded `error` (each plugin has
    kube-scheduler's own wording) when the writing point did not run."""
    value = state.get(key)
    return value if isinstance(value, kind) else Status(Code.ERROR, error)
