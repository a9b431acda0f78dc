"""Go duration strings ("1m30s", "200ms"), the format of durations in kube-scheduler's config."""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration; ValueError names the bad input."""
    s = text.strip()
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    pos = 0
    total = 0.0
    for match in _PART.finditer(s):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not s or pos != len(s):
        raise ValueError(f'time: invalid duration "{text}"')
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's time.Duration.String(): how kube-scheduler prints a duration in messages."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return f"{sign}{_trim(nanos, size)}{unit}"
    whole_seconds, frac = divmod(nanos, 1_000_000_000)
    hours, rest = divmod(whole_seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = _trim(secs * 1_000_000_000 + frac, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _trim(value: int, unit: int) -> str:
    """value/unit as a decimal without trailing zeros (Go's fmtFrac)."""
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")
