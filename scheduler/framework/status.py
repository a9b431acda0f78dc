"""Plugin results as values: a Code, human-readable reasons, the plugin that produced it.

A plugin returns None for Success on hot paths (Filter/Score per node) to avoid allocating;
`Status` objects carry every other outcome.
"""

from __future__ import annotations

import enum


class Code(enum.IntEnum):
    SUCCESS = 0
    # An internal error: the pod is retried with backoff, never counted as unschedulable.
    ERROR = 1
    # The pod does not fit now; preemption may help.
    UNSCHEDULABLE = 2
    # The pod does not fit and preemption on this node cannot help.
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    # Permit: the pod waits.
    WAIT = 4
    # The plugin has nothing to do for this pod (PreFilter/PreScore/Bind).
    SKIP = 5
    # The pod waits for something outside scheduling (e.g. an external controller).
    PENDING = 6

    def label(self) -> str:
        return _CODE_LABELS[self]


_CODE_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class Status:
    """The result of running a plugin."""

    __slots__ = ("code", "error", "plugin", "reasons")

    def __init__(
        self,
        code: Code = Code.SUCCESS,
        *reasons: str,
        plugin: str = "",
        error: BaseException | None = None,
    ) -> None:
        self.code = code
        self.reasons: list[str] = list(reasons)
        self.plugin = plugin
        self.error = error

    @classmethod
    def as_error(cls, err: BaseException, plugin: str = "") -> Status:
        return cls(Code.ERROR, str(err), plugin=plugin, error=err)

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in _REJECTED

    def is_error(self) -> bool:
        return self.code == Code.ERROR

    def __repr__(self) -> str:
        return f"Status({self.code.label()}, {self.reasons!r}, plugin={self.plugin!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (
            self.code == other.code
            and self.reasons == other.reasons
            and self.plugin == other.plugin
        )

    __hash__ = None  # type: ignore[assignment]


_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})

SUCCESS = Status()


def is_success(status: Status | None) -> bool:
    """None and Code.SUCCESS both mean success."""
    return status is None or status.code == Code.SUCCESS


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code
