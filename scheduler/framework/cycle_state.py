"""Per-cycle scratch space that plugins share (PreFilter writes, Filter/Score read)."""

from __future__ import annotations

from typing import Any, Protocol


class StateData(Protocol):
    def clone(self) -> StateData: ...


class CycleState:
    """A dict of plugin state keyed by plugin-chosen strings, cloned for preemption dry runs."""

    __slots__ = (
        "_data",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.skip_pre_bind_plugins: set[str] = set()
        self.record_plugin_metrics = False

    def read(self, key: str) -> Any:
        """The stored value; KeyError when the writer did not run (a plugin bug or a skip)."""
        return self._data[key]

    def get(self, key: str) -> Any:
        return self._data.get(key)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        """Clones values that know how to clone themselves; others are shared (immutable)."""
        copy = CycleState()
        for key, value in self._data.items():
            cloner = getattr(value, "clone", None)
            copy._data[key] = cloner() if cloner is not None else value
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        copy.record_plugin_metrics = self.record_plugin_metrics
        return copy
