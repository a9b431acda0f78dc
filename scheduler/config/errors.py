"""Field errors worded like kube-scheduler's (k8s.io/apimachinery field.Error)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def _go_value(value: Any) -> str:
    """How Go's field errors print a value: strings quoted, numbers and bools bare."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, default=str, separators=(",", ":"))


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    @classmethod
    def invalid(cls, path: str, value: Any, detail: str) -> FieldError:
        return cls(path, f"Invalid value: {_go_value(value)}: {detail}")

    @classmethod
    def required(cls, path: str, detail: str = "") -> FieldError:
        return cls(path, f"Required value: {detail}" if detail else "Required value")

    @classmethod
    def duplicate(cls, path: str, value: Any) -> FieldError:
        return cls(path, f"Duplicate value: {_go_value(value)}")

    @classmethod
    def unknown(cls, path: str) -> FieldError:
        return cls("", f'strict decoding error: unknown field "{path}"')


class ConfigError(Exception):
    """A configuration that cannot be used: one line per problem, each prefixed with the source.

    Every problem is reported at once so one run tells the user everything wrong with the file.
    """

    def __init__(self, source: str, errors: list[FieldError] | list[str]) -> None:
        self.source = source
        self.errors = [str(e) for e in errors]
        super().__init__("\n".join(f"{source}: {e}" for e in self.errors))
