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
    """The shortest Go-style form, for showing the effective config."""
    if seconds == int(seconds):
        whole = int(seconds)
        h, rest = divmod(whole, 3600)
        m, s = divmod(rest, 60)
        out = (f"{h}h" if h else "") + (f"{m}m" if m or h else "") + f"{s}s"
        return out
    return f"{seconds * 1000:g}ms"
