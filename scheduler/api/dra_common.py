"""Pieces shared by the DRA object modules: the parse error, device taints and quantities
(exact fractions, printed back in Kubernetes' canonical form for allocation results)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.api.quantity import QuantityError, parse_quantity

#: DeviceTaint effects that prevent allocation (others, like None, are ignored).
TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
TAINT_EFFECT_NONE = "None"


class DRAParseError(ValueError):
    """A DRA object the allocator cannot reason about; the message names object and field."""


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    effect: str
    time_added: str | None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        if self.time_added is not None:
            out["timeAdded"] = self.time_added
        return out


def kind_name(kind: str, meta: Mapping[str, Any]) -> str:
    """'Kind namespace/name' (or 'Kind name' for cluster-scoped objects), for messages."""
    namespace = meta.get("namespace")
    name = meta.get("name", "")
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def parse_quantity_field(raw: Any, what: str) -> Fraction:
    if raw is None:
        raise DRAParseError(f"{what}: a quantity is required")
    try:
        return parse_quantity(raw)
    except QuantityError as err:
        raise DRAParseError(f"{what}: {err}") from err


def parse_taint(raw: Mapping[str, Any], what: str) -> DeviceTaint:
    if not raw.get("key"):
        raise DRAParseError(f"{what}.key: Required value")
    return DeviceTaint(
        key=raw["key"],
        value=raw.get("value") or "",
        effect=raw.get("effect") or "",
        time_added=raw.get("timeAdded"),
    )


_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL_UP = (
    ("E", 10**18),
    ("P", 10**15),
    ("T", 10**12),
    ("G", 10**9),
    ("M", 10**6),
    ("k", 10**3),
)
_DECIMAL_DOWN = (("m", 10**3), ("u", 10**6), ("n", 10**9))


def format_quantity(value: Fraction, binary: bool = False) -> str:
    """A quantity string in Kubernetes' canonical form (binary suffixes for BinarySI values,
    decimal ones otherwise); values finer than nano are rounded up as Kubernetes does."""
    if value.denominator == 1:
        number = value.numerator
        if number == 0:
            return "0"
        if binary and abs(number) >= 1024:
            for suffix, scale in _BINARY:
                if number % scale == 0:
                    return f"{number // scale}{suffix}"
        for suffix, scale in _DECIMAL_UP:
            if number % scale == 0:
                return f"{number // scale}{suffix}"
        return str(number)
    for suffix, scale in _DECIMAL_DOWN:
        scaled = value * scale
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    nano = -((-value.numerator * 10**9) // value.denominator)
    return f"{nano}n"
