"""DefaultPreemptionArgs: defaults, strict decoding, kube-scheduler's validation messages."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.registry import ArgsError
from scheduler.plugins.default_preemption.args import PreemptionArgs, decode_args


def test_defaults() -> None:
    assert decode_args(None) == PreemptionArgs(10, 100)
    assert decode_args({"minCandidateNodesAbsolute": 0}) == PreemptionArgs(10, 0)


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        (
            {"minCandidateNodesPercentage": 101},
            "minCandidateNodesPercentage",
            "Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute",
            "Invalid value: -1: not in valid range [0, inf)",
        ),
        ({"minCandidates": 1}, "minCandidates", 'unknown field "minCandidates"'),
        (
            {"minCandidateNodesPercentage": "ten"},
            "minCandidateNodesPercentage",
            'Invalid value: "ten": must be an integer',
        ),
    ],
)
def test_invalid_args(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ArgsError) as err:
        decode_args(raw)
    assert (err.value.path, err.value.message) == (path, message)


def test_both_zero_reports_both_fields() -> None:
    with pytest.raises(ArgsError) as err:
        decode_args({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0})
    assert err.value.message == (
        "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
        "minCandidateNodesAbsolute, minCandidateNodesAbsolute: Invalid value: 0: cannot be zero "
        "at the same time as minCandidateNodesPercentage]"
    )
