"""Exact parsing of Kubernetes resource quantities ("100m", "1.5Gi", "2e3").

Kubernetes rounds up when converting a quantity to an integer (`Value()`, `MilliValue()`);
we do the same with exact rational arithmetic so that "0.1" CPU is exactly 100 milli-CPU.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096)
def parse_quantity(text: str | int | float) -> Fraction:
    """Returns the exact value of a quantity string (or a JSON number)."""
    if isinstance(text, bool):
        raise QuantityError(f"quantities must be strings or numbers, got {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"quantities must match the regular expression '{_QUANTITY.pattern}'")
    number, suffix = match.groups()
    base = Fraction(number)
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    exponent = _EXPONENT.match(suffix)
    if exponent is not None:
        return base * Fraction(10) ** int(exponent.group(1))
    raise QuantityError(f"unable to parse quantity's suffix in {text!r}")


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


@lru_cache(maxsize=4096)
def value(text: str | int | float) -> int:
    """The quantity rounded up to an integer, as `Quantity.Value()`."""
    return _ceil(parse_quantity(text))


@lru_cache(maxsize=4096)
def milli_value(text: str | int | float) -> int:
    """The quantity times 1000, rounded up, as `Quantity.MilliValue()`."""
    return _ceil(parse_quantity(text) * 1000)
