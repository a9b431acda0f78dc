"""Field error wording as k8s.io/apimachinery's field.Error prints it, for config and plugin
args validation alike (one place, so both read exactly like kube-scheduler)."""

from __future__ import annotations

import json
from typing import Any


def go_value(value: Any) -> str:
    """How field.Error renders a bad value: strings quoted, numbers and bools bare."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, default=str, separators=(",", ":"))


def invalid(value: Any, detail: str) -> str:
    return f"Invalid value: {go_value(value)}: {detail}"


def required(detail: str = "") -> str:
    return f"Required value: {detail}" if detail else "Required value"


def duplicate(value: Any) -> str:
    return f"Duplicate value: {go_value(value)}"


def forbidden(detail: str) -> str:
    return f"Forbidden: {detail}"


def not_supported(value: Any, supported: tuple[str, ...]) -> str:
    quoted = ", ".join(json.dumps(v) for v in supported)
    return f"Unsupported value: {go_value(value)}: supported values: {quoted}"
