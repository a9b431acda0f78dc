"""Strict decoding of plugin args with kube-scheduler's error text (apimachinery field.Error).

Errors are collected like field.ErrorList and raised as one ArgsError: a single error keeps
its path, several are joined as ToAggregate prints them ("[p1: m1, p2: m2]").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scheduler.api import field
from scheduler.framework.registry import ArgsError

LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an"
    " alphanumeric character"
)
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or"
    " '.', and must start and end with an alphanumeric character"
)
_LABEL_KEY_RE = re.compile(LABEL_KEY_FMT)
_DNS_SUBDOMAIN_RE = re.compile(_DNS_SUBDOMAIN_FMT)
_ARGS_ENVELOPE = ("apiVersion", "kind")


class FieldErrors:
    """An ordered list of (path, message) in field.Error's wording."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.items.append((path, field.invalid(value, detail)))

    def required(self, path: str, detail: str) -> None:
        self.items.append((path, field.required(detail)))

    def forbidden(self, path: str, detail: str) -> None:
        self.items.append((path, field.forbidden(detail)))

    def duplicate(self, path: str, value: Any) -> None:
        self.items.append((path, field.duplicate(value)))

    def not_supported(self, path: str, value: Any, supported: tuple[str, ...]) -> None:
        self.items.append((path, field.not_supported(value, supported)))

    def raise_if_any(self) -> None:
        if len(self.items) == 1:
            raise ArgsError(*self.items[0])
        if self.items:
            joined = ", ".join(f"{path}: {msg}" for path, msg in self.items)
            raise ArgsError("", f"[{joined}]")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError, spacing included ("'a',  or 'b', regex used ...")."""
    shown = "".join(f"'{e}', " if i == 0 else f" or '{e}', " for i, e in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def label_key_errors(key: str) -> list[str]:
    """validation.IsQualifiedName: why `key` is not a valid label key (empty when it is)."""
    parts = key.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS_SUBDOMAIN_RE.fullmatch(prefix):
                errs.append(
                    "prefix part "
                    + regex_error(_DNS_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com")
                )
    name = parts[-1]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append(
            "name part "
            + regex_error(_LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def check_object(raw: Any, path: str, known: tuple[str, ...]) -> Mapping[str, Any]:
    """`raw` as a mapping ({} for null); an unknown field fails as strict decoding does."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ArgsError(path, field.invalid(raw, "must be an object"))
    for key in raw:
        if key not in known:
            raise ArgsError(f"{path}.{key}" if path else key, f'unknown field "{key}"')
    return raw


def check_args_object(raw: Any, known: tuple[str, ...]) -> Mapping[str, Any]:
    """The top-level args object, which may also carry apiVersion and kind."""
    return check_object(raw, "", (*_ARGS_ENVELOPE, *known))


def check_list(raw: Any, path: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ArgsError(path, field.invalid(raw, "must be a list"))
    return raw


def check_int(raw: Mapping[str, Any], key: str, path: str, default: int = 0) -> int:
    """An int32 field (`default` when absent or null), as the v1 types declare weights and
    shape points."""
    value = check_int64(raw, key, path, default)
    if not -(2**31) <= value < 2**31:
        field_path = f"{path}.{key}" if path else key
        raise ArgsError(field_path, f"Invalid value: {value}: out of range for int32")
    return value


def check_int64(raw: Mapping[str, Any], key: str, path: str, default: int = 0) -> int:
    """An int64 field (`default` when absent or null), such as a number of seconds; its range
    is not checked."""
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgsError(
            f"{path}.{key}" if path else key, field.invalid(value, "must be an integer")
        )
    return value
