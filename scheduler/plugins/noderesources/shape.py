"""RequestedToCapacityRatio's broken-linear shape, per value and over numpy arrays.

Both forms reproduce Go's int64 arithmetic: the interpolation divides with truncation toward
zero, which matters for decreasing shapes where the numerator is negative.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from scheduler.framework.interface import MAX_NODE_SCORE

# config.MaxCustomPriorityScore: shape scores are given in [0, 10] and scaled to node scores.
MAX_CUSTOM_PRIORITY_SCORE = 10
IntArray = npt.NDArray[np.int64]


def trunc_div(a: int, b: int) -> int:
    """Go's integer division: the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def trunc_div_array(a: IntArray, b: IntArray | int) -> IntArray:
    """trunc_div element-wise for positive divisors."""
    out: IntArray = np.where(a < 0, -((-a) // b), a // b).astype(np.int64)
    return out


class BrokenLinear:
    """helper.BuildBrokenLinearFunction over (utilization, score) points sorted by utilization."""

    __slots__ = ("_scores", "_utils", "points")

    def __init__(self, points: Sequence[tuple[int, int]]) -> None:
        if not points:
            raise ValueError("a shape needs at least one point")
        self.points = tuple(points)
        self._utils: IntArray = np.array([u for u, _ in points], np.int64)
        self._scores: IntArray = np.array([s for _, s in points], np.int64)

    @classmethod
    def from_config(cls, shape: Sequence[tuple[int, int]]) -> BrokenLinear:
        """Scales config scores (0..10) to node scores (0..100), as kube-scheduler does."""
        factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        return cls([(u, s * factor) for u, s in shape])

    def __call__(self, p: int) -> int:
        points = self.points
        for i, (utilization, score) in enumerate(points):
            if p <= utilization:
                if i == 0:
                    return score
                u0, s0 = points[i - 1]
                return s0 + trunc_div((score - s0) * (p - u0), utilization - u0)
        return points[-1][1]

    def apply(self, p: IntArray) -> IntArray:
        """The function at every element of p."""
        utils, scores = self._utils, self._scores
        last = len(utils) - 1
        # First point whose utilization is >= p, as the Go loop finds it.
        i = np.searchsorted(utils, p, side="left")
        hi = np.minimum(i, last)
        lo = np.maximum(hi - 1, 0)
        span = np.where(hi > lo, utils[hi] - utils[lo], 1)
        inner = scores[lo] + trunc_div_array((scores[hi] - scores[lo]) * (p - utils[lo]), span)
        out: IntArray = np.where(i == 0, scores[0], np.where(i > last, scores[last], inner))
        return out.astype(np.int64)
