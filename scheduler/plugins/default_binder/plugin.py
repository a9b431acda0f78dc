"""DefaultBinder: binds with the pods/binding subresource through the client layer."""

from __future__ import annotations

from scheduler.framework import CycleState, Handle, Pod, Status

NAME = "DefaultBinder"


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            self._handle.api.bind(pod, node_name)
        except Exception as err:  # the API error becomes the binding cycle's failure
            return Status.as_error(err)
        return None
