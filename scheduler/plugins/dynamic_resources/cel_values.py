"""Kubernetes' CEL value types `quantity` and `semver` (k8s.io/apiserver pkg/cel/library), as
functions over the CEL library's values.

cel-expr-python cannot carry opaque Python objects through an evaluation, so a quantity is a CEL
map {QUANTITY_KEY: "numerator/denominator"} (exact, normalised: two equal quantities are equal
maps, as Quantity.Equal says) and a semver a map {SEMVER_KEY: "major.minor.patch[-pre]"} (build
metadata dropped: blang/semver's equality ignores it). The member functions dispatch on the key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from scheduler.framework import QuantityError, format_quantity
from scheduler.framework import parse_quantity as _parse_quantity

QUANTITY_KEY = "__k8s.quantity__"
SEMVER_KEY = "__k8s.semver__"

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class CELValueError(ValueError):
    """A runtime error of a Kubernetes CEL function (the evaluation fails with its message)."""


# --- quantity -------------------------------------------------------------------------------


def quantity_value(value: Fraction) -> dict[str, str]:
    return {QUANTITY_KEY: f"{value.numerator}/{value.denominator}"}


def quantity_of(value: Any) -> Fraction | None:
    if isinstance(value, Mapping) and len(value) == 1 and QUANTITY_KEY in value:
        return Fraction(value[QUANTITY_KEY])
    return None


def _need_quantity(value: Any) -> Fraction:
    q = quantity_of(value)
    if q is None:
        raise CELValueError("no such overload")
    return q


#: resource.ParseQuantity's format check (its error message quotes it).
_GO_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")


def quantity(text: str) -> dict[str, str]:
    if not _GO_QUANTITY.match(text):
        raise CELValueError(
            f"quantities must match the regular expression '{_GO_QUANTITY.pattern}'"
        )
    try:
        return quantity_value(_parse_quantity(text))
    except QuantityError as err:
        raise CELValueError(str(err)) from err


def is_quantity(text: str) -> bool:
    if not _GO_QUANTITY.match(text):
        return False
    try:
        _parse_quantity(text)
    except QuantityError:
        return False
    return True


def quantity_sign(value: Any) -> int:
    q = _need_quantity(value)
    return (q > 0) - (q < 0)


def _as_int64(q: Fraction) -> int | None:
    """Quantity.AsInt64: only integral values that fit an int64."""
    if q.denominator != 1 or not _INT64_MIN <= q.numerator <= _INT64_MAX:
        return None
    return q.numerator


def quantity_is_integer(value: Any) -> bool:
    return _as_int64(_need_quantity(value)) is not None


def quantity_as_integer(value: Any) -> int:
    v = _as_int64(_need_quantity(value))
    if v is None:
        raise CELValueError("cannot convert value to integer")
    return v


def quantity_as_float(value: Any) -> float:
    return float(_need_quantity(value))


def _operand(other: Any) -> Fraction:
    if isinstance(other, int) and not isinstance(other, bool):
        return Fraction(other)
    return _need_quantity(other)


def quantity_add(value: Any, other: Any) -> dict[str, str]:
    return quantity_value(_need_quantity(value) + _operand(other))


def quantity_sub(value: Any, other: Any) -> dict[str, str]:
    return quantity_value(_need_quantity(value) - _operand(other))


def quantity_text(value: Fraction) -> str:
    return format_quantity(value)


# --- semver ---------------------------------------------------------------------------------

_ALNUM_HYPHEN = re.compile(r"^[0-9A-Za-z-]+$")


def _numeric(part: str, what: str) -> int:
    if not part or not part.isdigit() or not part.isascii():
        raise CELValueError(f"Invalid character(s) found in {what} number {part!r}")
    if len(part) > 1 and part[0] == "0":
        raise CELValueError(f"{what.capitalize()} number must not contain leading zeroes {part!r}")
    return int(part)


def parse_semver(text: str) -> tuple[int, int, int, tuple[str, ...]]:
    """blang/semver/v4 Parse: strict major.minor.patch[-pre][+build]; build is dropped."""
    if not text:
        raise CELValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise CELValueError("No Major.Minor.Patch elements found")
    major = _numeric(parts[0], "major")
    minor = _numeric(parts[1], "minor")
    rest = parts[2]
    build = ""
    if "+" in rest:
        rest, build = rest.split("+", 1)
        for ident in build.split("."):
            if not _ALNUM_HYPHEN.match(ident):
                raise CELValueError(f"Invalid character(s) found in build meta data {ident!r}")
    pre: tuple[str, ...] = ()
    if "-" in rest:
        rest, pre_text = rest.split("-", 1)
        idents = pre_text.split(".")
        for ident in idents:
            if not ident:
                raise CELValueError("Prerelease is empty")
            if not _ALNUM_HYPHEN.match(ident):
                raise CELValueError(f"Invalid character(s) found in prerelease {ident!r}")
            if ident.isdigit() and len(ident) > 1 and ident[0] == "0":
                raise CELValueError(
                    f"Numeric PreRelease version must not contain leading zeroes {ident!r}"
                )
        pre = tuple(idents)
    patch = _numeric(rest, "patch")
    return major, minor, patch, pre


def _normalize(text: str) -> str:
    """normalizeAndParse's rewriting: a leading "v", leading zeroes and short versions."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            if not trimmed or trimmed[0] not in "0123456789":
                trimmed = "0" + trimmed
            parts[i] = trimmed
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise CELValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def semver_value(text: str, normalize: bool = False) -> dict[str, str]:
    major, minor, patch, pre = parse_semver(_normalize(text) if normalize else text)
    version = f"{major}.{minor}.{patch}" + (f"-{'.'.join(pre)}" if pre else "")
    return {SEMVER_KEY: version}


def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        semver_value(text, normalize)
    except CELValueError:
        return False
    return True


def semver_of(value: Any) -> tuple[int, int, int, tuple[str, ...]] | None:
    if isinstance(value, Mapping) and len(value) == 1 and SEMVER_KEY in value:
        return parse_semver(value[SEMVER_KEY])
    return None


def _need_semver(value: Any) -> tuple[int, int, int, tuple[str, ...]]:
    v = semver_of(value)
    if v is None:
        raise CELValueError("no such overload")
    return v


def _cmp_pre(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    if not a or not b:
        return (not a) - (not b)  # a release sorts after its prereleases
    for x, y in zip(a, b, strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return (int(x) > int(y)) - (int(x) < int(y))
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1
        return (x > y) - (x < y)
    return (len(a) > len(b)) - (len(a) < len(b))


def semver_compare(
    a: tuple[int, int, int, tuple[str, ...]], b: tuple[int, int, int, tuple[str, ...]]
) -> int:
    if a[:3] != b[:3]:
        return (a[:3] > b[:3]) - (a[:3] < b[:3])
    return _cmp_pre(a[3], b[3])


def semver_major(value: Any) -> int:
    return _need_semver(value)[0]


def semver_minor(value: Any) -> int:
    return _need_semver(value)[1]


def semver_patch(value: Any) -> int:
    return _need_semver(value)[2]


# --- members shared by both types -----------------------------------------------------------


def compare_to(value: Any, other: Any) -> int:
    """compareTo on two quantities or two semvers."""
    q = quantity_of(value)
    if q is not None:
        o = _need_quantity(other)
        return (q > o) - (q < o)
    return semver_compare(_need_semver(value), _need_semver(other))


def is_greater_than(value: Any, other: Any) -> bool:
    return compare_to(value, other) == 1


def is_less_than(value: Any, other: Any) -> bool:
    return compare_to(value, other) == -1
