"""Running a translated allocator case and comparing its answer."""

from __future__ import annotations

import re
from typing import Any

from scheduler.plugins.dynamic_resources.allocator import allocate_case, run_case

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class Error:
    """An expected error, by a substring of its message."""

    def __init__(self, substring: str) -> None:
        self.substring = substring


def _strip_share_ids(allocations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for a in allocations:
        for r in a["devices"]["results"]:
            if "shareID" in r:
                assert UUID.match(r["shareID"]), r["shareID"]
                r["shareID"] = "<share>"
    return allocations


def check(case: dict[str, Any], expected: list[dict[str, Any]] | Error | None) -> None:
    answer = allocate_case(case)
    if isinstance(expected, Error):
        assert "error" in answer, answer
        assert expected.substring in answer["error"], answer["error"]
        return
    assert "error" not in answer, answer["error"]
    got = answer["allocations"]
    if expected is None:
        assert got is None, got
        return
    assert got is not None, "unsatisfiable"
    assert _strip_share_ids(got) == expected


def steps(case: dict[str, Any]) -> int:
    """How many search steps (upstream's allocateOne invocations) the case takes."""
    return run_case(case).steps
