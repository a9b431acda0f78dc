"""Field errors worded like kube-scheduler's (k8s.io/apimachinery field.Error)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.api import field


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    @classmethod
    def invalid(cls, path: str, value: Any, detail: str) -> FieldError:
        return cls(path, field.invalid(value, detail))

    @classmethod
    def required(cls, path: str, detail: str = "") -> FieldError:
        return cls(path, field.required(detail))

    @classmethod
    def duplicate(cls, path: str, value: Any) -> FieldError:
        return cls(path, field.duplicate(value))

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
