"""Shared plugin helpers: DefaultNormalizeScore and Go integer division."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.plugins.helper.scores import default_normalize_score, go_div


@pytest.mark.parametrize(
    ("raw", "reverse", "expected"),
    [
        ([10, 20, 40], False, [25, 50, 100]),
        ([10, 20, 40], True, [75, 50, 0]),
        ([1, 3], False, [33, 100]),
        ([0, 0, 0], False, [0, 0, 0]),
        ([0, 0, 0], True, [100, 100, 100]),
        ([7], True, [0]),
        ([], True, []),
    ],
)
def test_default_normalize_score(raw: list[int], reverse: bool, expected: list[int]) -> None:
    scores = np.array(raw, np.int64)
    default_normalize_score(scores, reverse)
    assert scores.tolist() == expected


def test_default_normalize_score_custom_max_priority() -> None:
    scores = np.array([1, 2, 4], np.int64)
    default_normalize_score(scores, False, max_priority=10)
    assert scores.tolist() == [2, 5, 10]


@pytest.mark.parametrize(
    ("a", "b", "q"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)]
)
def test_go_div_truncates_toward_zero(a: int, b: int, q: int) -> None:
    assert go_div(a, b) == q
