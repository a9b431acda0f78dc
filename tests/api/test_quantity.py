from fractions import Fraction

import pytest

from scheduler.api.quantity import QuantityError, milli_value, parse_quantity, value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Fraction(1)),
        ("100m", Fraction(1, 10)),
        ("0.1", Fraction(1, 10)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("2Ki", Fraction(2048)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("2e3", Fraction(2000)),
        ("1E-3", Fraction(1, 1000)),
        ("500n", Fraction(1, 2 * 10**6)),
        (".5", Fraction(1, 2)),
        (3, Fraction(3)),
    ],
)
def test_parse_quantity_is_exact(text: str | int, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


def test_value_and_milli_value_round_up_like_kubernetes() -> None:
    assert milli_value("0.1") == 100
    assert milli_value("1") == 1000
    assert milli_value("1n") == 1  # MilliValue rounds up
    assert value("1.5") == 2
    assert value("100m") == 1
    assert value("1Gi") == 2**30


@pytest.mark.parametrize("text", ["", "abc", "1Q", "1.2.3", "--1"])
def test_malformed_quantities_are_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)
