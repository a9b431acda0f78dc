"""Scoring shapes, the (utilization, score) points of NodeResourcesFit's RequestedToCapacityRatio
and VolumeBinding's capacity score: their strict decoding and validation, and the broken-linear
function they define, per value and over numpy arrays.

Both forms of the function reproduce Go's int64 arithmetic: the interpolation divides with
truncation toward zero, which matters for decreasing shapes where the numerator is negative.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.framework import MAX_NODE_SCORE, FieldErrors, check_int, check_list, check_object
from scheduler.plugins.helper.scores import IntArray, go_div, go_div_array

#: A scoring shape's bounds (config.MaxCustomPriorityScore, utilization in percent).
MAX_SHAPE_SCORE = 10
MAX_SHAPE_UTILIZATION = 100


def decode_shape(raw: Any, path: str) -> list[tuple[int, int]]:
    """A `shape` list of {utilization, score} points (NodeResourcesFit's RequestedToCapacity
    ratio, VolumeBinding's capacity score), strictly decoded."""
    points = []
    for i, item in enumerate(check_list(raw, path)):
        point_path = f"{path}[{i}]"
        point = check_object(item, point_path, ("utilization", "score"))
        points.append(
            (check_int(point, "utilization", point_path), check_int(point, "score", point_path))
        )
    return points


def validate_shape(points: list[tuple[int, int]], path: str, errs: FieldErrors) -> None:
    """validateFunctionShape: at least one point, utilization increasing, both in range."""
    if not points:
        errs.required(path, "at least one point must be specified")
        return
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            errs.invalid(
                f"{path}[{i}].utilization",
                points[i][0],
                "values must be sorted in increasing order",
            )
            break
    for i, (utilization, score) in enumerate(points):
        if not 0 <= utilization <= MAX_SHAPE_UTILIZATION:
            errs.invalid(
                f"{path}[{i}].utilization",
                utilization,
                f"not in valid range [0, {MAX_SHAPE_UTILIZATION}]",
            )
        if not 0 <= score <= MAX_SHAPE_SCORE:
            errs.invalid(f"{path}[{i}].score", score, f"not in valid range [0, {MAX_SHAPE_SCORE}]")


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
        factor = MAX_NODE_SCORE // MAX_SHAPE_SCORE
        return cls([(u, s * factor) for u, s in shape])

    def __call__(self, p: int) -> int:
        points = self.points
        for i, (utilization, score) in enumerate(points):
            if p <= utilization:
                if i == 0:
                    return score
                u0, s0 = points[i - 1]
                return s0 + go_div((score - s0) * (p - u0), utilization - u0)
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
        inner = scores[lo] + go_div_array((scores[hi] - scores[lo]) * (p - utils[lo]), span)
        out: IntArray = np.where(i == 0, scores[0], np.where(i > last, scores[last], inner))
        return out.astype(np.int64)
