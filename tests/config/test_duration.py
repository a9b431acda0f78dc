"""Go duration strings: parsed as time.ParseDuration does and printed as Duration.String()."""

from __future__ import annotations

import pytest

from scheduler.config.duration import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("200ms", 0.2),
        ("-2s", -2.0),
        ("1h2m3s4ms", 3723.004),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "1x", "s", "1m 2s", "--1s"])
def test_parse_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=f'time: invalid duration "{text}"'):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (10, "10s"),
        (1.5, "1.5s"),
        (90, "1m30s"),
        (300, "5m0s"),
        (3600, "1h0m0s"),
        (3661.25, "1h1m1.25s"),
        (0.2, "200ms"),
        (0.0000015, "1.5µs"),
        (-2, "-2s"),
    ],
)
def test_format_like_go(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
