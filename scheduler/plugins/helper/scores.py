"""Score helpers shared by plugins: DefaultNormalizeScore and Go's integer division."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.framework import MAX_NODE_SCORE, ScoreColumn

IntArray = npt.NDArray[np.int64]


def go_div(a: int, b: int) -> int:
    """Go's integer division, which truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_div_array(a: IntArray, b: IntArray | int) -> IntArray:
    """go_div element-wise, for positive divisors."""
    out: IntArray = np.where(a < 0, -((-a) // b), a // b).astype(np.int64)
    return out


def default_normalize_score(
    scores: ScoreColumn, reverse: bool, max_priority: int = MAX_NODE_SCORE
) -> None:
    """helper.DefaultNormalizeScore, in place: scale to [0, max_priority], optionally reversed."""
    if len(scores) == 0:
        return
    max_count = max(0, int(scores.max()))  # Go starts its running maximum at zero
    if max_count == 0:
        if reverse:
            scores[:] = max_priority
        return
    # Scores are non-negative here, so floor division equals Go's truncation.
    scaled = max_priority * scores // max_count
    if reverse:
        scaled = max_priority - scaled
    np.copyto(scores, scaled)
