"""VolumeBindingArgs: v1 defaults (SetDefaults_VolumeBindingArgs, StorageCapacityScoring on as
in v1.37) and ValidateVolumeBindingArgsWithOptions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api import field
from scheduler.framework.registry import ArgsError
from scheduler.plugins.helper.args import (
    FieldErrors,
    check_args_object,
    check_int,
    check_list,
    check_object,
)

BIND_TIMEOUT = "bindTimeoutSeconds"
SHAPE = "shape"
DEFAULT_BIND_TIMEOUT_SECONDS = 600
MAX_SHAPE_SCORE = 10  # config.MaxCustomPriorityScore
MAX_SHAPE_UTILIZATION = 100
#: Emptier nodes first: score 10 at 0% utilization, 0 at 100%.
DEFAULT_SHAPE: tuple[tuple[int, int], ...] = ((0, MAX_SHAPE_SCORE), (MAX_SHAPE_UTILIZATION, 0))


@dataclass(frozen=True)
class VolumeBindingArgs:
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: tuple[tuple[int, int], ...] = DEFAULT_SHAPE
    """(utilization, score) points, scores in [0, 10]."""


def _bind_timeout(args: Mapping[str, Any]) -> int:
    value = args.get(BIND_TIMEOUT)
    if value is None:
        return DEFAULT_BIND_TIMEOUT_SECONDS
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgsError(BIND_TIMEOUT, field.invalid(value, "must be an integer"))
    return value


def _decode_shape(raw: Any) -> list[tuple[int, int]]:
    points = []
    for i, item in enumerate(check_list(raw, SHAPE)):
        path = f"{SHAPE}[{i}]"
        point = check_object(item, path, ("utilization", "score"))
        points.append((check_int(point, "utilization", path), check_int(point, "score", path)))
    return points


def _validate_shape(points: list[tuple[int, int]], errs: FieldErrors) -> None:
    """validateFunctionShape."""
    if not points:
        errs.required(SHAPE, "at least one point must be specified")
        return
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            errs.invalid(
                f"{SHAPE}[{i}].utilization",
                points[i][0],
                "values must be sorted in increasing order",
            )
            break
    for i, (utilization, score) in enumerate(points):
        if not 0 <= utilization <= MAX_SHAPE_UTILIZATION:
            errs.invalid(
                f"{SHAPE}[{i}].utilization",
                utilization,
                f"not in valid range [0, {MAX_SHAPE_UTILIZATION}]",
            )
        if not 0 <= score <= MAX_SHAPE_SCORE:
            errs.invalid(f"{SHAPE}[{i}].score", score, f"not in valid range [0, {MAX_SHAPE_SCORE}]")


def decode_args(raw: Mapping[str, Any] | None) -> VolumeBindingArgs:
    """Strict decoding, defaults (600 s; the default shape when none is given), validation."""
    args = check_args_object(raw, (BIND_TIMEOUT, SHAPE))
    timeout = _bind_timeout(args)
    points = _decode_shape(args.get(SHAPE))
    if not points:
        points = list(DEFAULT_SHAPE)
    errs = FieldErrors()
    if timeout < 0:
        errs.invalid(
            BIND_TIMEOUT, timeout, "invalid BindTimeoutSeconds, should not be a negative value"
        )
    _validate_shape(points, errs)
    errs.raise_if_any()
    return VolumeBindingArgs(timeout, tuple(points))
