"""The scoring strategies, each per node (lists) and over (resources, rows) matrices.

Both forms give identical results: integer arithmetic is exact int64 with Go's truncating
division, and BalancedAllocation's float64 steps follow Go's order of operations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from scheduler.framework import MAX_NODE_SCORE, ScoreColumn
from scheduler.plugins.helper.scores import go_div, go_div_array
from scheduler.plugins.helper.shape import BrokenLinear

IntMatrix = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
MAX_UTILIZATION = 100


class Scorer(Protocol):
    """A resourceAllocationScorer's scoring function in both shapes."""

    def score(self, requested: list[int], allocated: list[int], allocatable: list[int]) -> int: ...

    def score_matrix(
        self, requested: IntMatrix, allocated: IntMatrix, allocatable: IntMatrix
    ) -> ScoreColumn: ...


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def _weighted_mean(per: IntMatrix, counted: npt.NDArray[np.bool_], weights: IntMatrix) -> IntMatrix:
    """sum(score*weight)/sum(weight) over counted resources, 0 when nothing counts."""
    total = (np.where(counted, per, 0) * weights).sum(axis=0)
    weight_sum = (counted * weights).sum(axis=0)
    out: IntMatrix = np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)
    return out.astype(np.int64)


class _WeightedMeanOfResources:
    """The weighted mean of a per-resource score over the resources a node offers.

    Subclasses give that score per node (`resource_score`) and per matrix (`resource_matrix`).
    """

    __slots__ = ("_weights", "weights")

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = tuple(weights)
        self._weights: IntMatrix = np.array(self.weights, np.int64).reshape(-1, 1)

    @staticmethod
    def resource_score(requested: int, capacity: int) -> int:
        raise NotImplementedError

    @staticmethod
    def resource_matrix(requested: IntMatrix, allocatable: IntMatrix, safe: IntMatrix) -> IntMatrix:
        """The per-resource scores; `safe` is allocatable with its zeros replaced by 1."""
        raise NotImplementedError

    def score(self, requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
        total = weight_sum = 0
        for i, weight in enumerate(self.weights):
            cap = allocatable[i]
            if cap == 0:
                continue
            total += self.resource_score(requested[i], cap) * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0

    def score_matrix(
        self, requested: IntMatrix, allocated: IntMatrix, allocatable: IntMatrix
    ) -> ScoreColumn:
        offered = allocatable != 0
        if offered.all():  # every resource counts on every node: one weight sum for all
            per = self.resource_matrix(requested, allocatable, allocatable)
            total: IntMatrix = (per * self._weights).sum(axis=0)
            return total // max(sum(self.weights), 1)
        safe = np.where(offered, allocatable, 1)
        per = self.resource_matrix(requested, allocatable, safe)
        return _weighted_mean(per, offered, self._weights)


class LeastAllocated(_WeightedMeanOfResources):
    """Favours nodes with more free capacity after placing the pod."""

    __slots__ = ()
    resource_score = staticmethod(least_requested_score)

    @staticmethod
    def resource_matrix(requested: IntMatrix, allocatable: IntMatrix, safe: IntMatrix) -> IntMatrix:
        free: IntMatrix = (allocatable - requested) * MAX_NODE_SCORE // safe
        return np.where(requested <= allocatable, free, 0)


class MostAllocated(_WeightedMeanOfResources):
    """Favours nodes that are already busy (bin packing)."""

    __slots__ = ()
    resource_score = staticmethod(most_requested_score)

    @staticmethod
    def resource_matrix(requested: IntMatrix, allocatable: IntMatrix, safe: IntMatrix) -> IntMatrix:
        used: IntMatrix = np.minimum(requested, allocatable) * MAX_NODE_SCORE // safe
        return used


def _round_ratio(total: int, weight_sum: int) -> int:
    """math.Round(float64(total)/float64(weight_sum)) for non-negative ints, computed exactly.

    A float quotient can only land on .5 when the exact quotient is .5, so rounding the exact
    remainder half away from zero decides every case the same way Go does.
    """
    q, r = divmod(total, weight_sum)
    return q + 1 if 2 * r >= weight_sum else q


class RequestedToCapacityRatio:
    """Scores utilization through a configured broken-linear shape."""

    __slots__ = ("_weights", "function", "weights")

    def __init__(self, weights: Sequence[int], shape: Sequence[tuple[int, int]]) -> None:
        self.weights = tuple(weights)
        self._weights: IntMatrix = np.array(self.weights, np.int64).reshape(-1, 1)
        self.function = BrokenLinear.from_config(shape)

    def resource_score(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return self.function(MAX_UTILIZATION)
        return self.function(requested * MAX_UTILIZATION // capacity)

    def score(self, requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
        total = weight_sum = 0
        for i, weight in enumerate(self.weights):
            cap = allocatable[i]
            if cap == 0:
                continue
            value = self.resource_score(requested[i], cap)
            if value > 0:
                total += value * weight
                weight_sum += weight
        return _round_ratio(total, weight_sum) if weight_sum else 0

    def score_matrix(
        self, requested: IntMatrix, allocated: IntMatrix, allocatable: IntMatrix
    ) -> ScoreColumn:
        offered = allocatable != 0
        over = requested > allocatable
        safe = np.where(offered, allocatable, 1)
        utilization = np.where(
            over | ~offered, MAX_UTILIZATION, requested * MAX_UTILIZATION // safe
        )
        per = self.function.apply(utilization)
        counted = offered & (per > 0)
        total = (np.where(counted, per, 0) * self._weights).sum(axis=0)
        weight_sum = (counted * self._weights).sum(axis=0)
        safe_sum = np.maximum(weight_sum, 1)
        quotient, remainder = np.divmod(total, safe_sum)
        rounded = quotient + (2 * remainder >= safe_sum)
        out: ScoreColumn = np.where(weight_sum > 0, rounded, 0).astype(np.int64)
        return out


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """(1 - std of the usage fractions) * 100, truncated; fractions are capped at 1."""
    fractions: list[float] = []
    total_fraction = 0.0
    for req, cap in zip(requested, allocatable, strict=True):
        if cap == 0:
            continue
        fraction = float(req) / float(cap)
        if fraction > 1:
            fraction = 1.0
        total_fraction += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total_fraction / float(len(fractions))
        acc = 0.0
        for fraction in fractions:
            acc = acc + (fraction - mean) * (fraction - mean)
        std = math.sqrt(acc / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_resource_score_matrix(requested: IntMatrix, allocatable: IntMatrix) -> IntMatrix:
    """balanced_resource_score per column, with the same float operations in the same order."""
    k, m = allocatable.shape
    offered = allocatable != 0
    if k == 2 and offered.all():
        return _two_offered_score_matrix(requested, allocatable)
    fractions = np.minimum(
        requested.astype(np.float64) / np.where(offered, allocatable, 1).astype(np.float64), 1.0
    )
    count = offered.sum(axis=0)
    total: FloatArray = np.zeros(m, np.float64)
    first: FloatArray = np.zeros(m, np.float64)
    second: FloatArray = np.zeros(m, np.float64)
    seen = np.zeros(m, np.int64)
    for i in range(k):
        row, present = fractions[i], offered[i]
        total = np.where(present, total + row, total)
        first = np.where(present & (seen == 0), row, first)
        second = np.where(present & (seen == 1), row, second)
        seen = seen + present
    std: FloatArray = np.zeros(m, np.float64)
    two = count == 2
    if two.any():
        std = np.where(two, np.abs((first - second) / 2), std)
    many = count > 2
    if many.any():
        n = np.maximum(count, 1).astype(np.float64)
        mean = total / n
        acc: FloatArray = np.zeros(m, np.float64)
        for i in range(k):
            diff = fractions[i] - mean
            acc = np.where(offered[i], acc + diff * diff, acc)
        std = np.where(many, np.sqrt(acc / n), std)
    out: IntMatrix = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return out


def _two_offered_score_matrix(requested: IntMatrix, allocatable: IntMatrix) -> IntMatrix:
    """The general form's two-fraction branch for every column (the default cpu and memory,
    both offered everywhere): the same float operations, a third of the array operations."""
    fractions = np.minimum(requested.astype(np.float64) / allocatable.astype(np.float64), 1.0)
    std = np.abs((fractions[0] - fractions[1]) / 2)
    out: IntMatrix = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return out


class BalancedAllocation:
    """How much the pod improves balance: 50 + (50 + with_pod - without_pod) / 2."""

    __slots__ = ()

    def score(self, requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
        with_pod = balanced_resource_score(requested, allocatable)
        without_pod = balanced_resource_score(allocated, allocatable)
        half = MAX_NODE_SCORE // 2
        return half + go_div(half + with_pod - without_pod, 2)

    def score_matrix(
        self, requested: IntMatrix, allocated: IntMatrix, allocatable: IntMatrix
    ) -> ScoreColumn:
        with_pod = balanced_resource_score_matrix(requested, allocatable)
        without_pod = balanced_resource_score_matrix(allocated, allocatable)
        half = MAX_NODE_SCORE // 2
        out: ScoreColumn = half + go_div_array(half + with_pod - without_pod, 2)
        return out.astype(np.int64)
