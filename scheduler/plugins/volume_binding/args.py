"""VolumeBindingArgs: v1 defaults (SetDefaults_VolumeBindingArgs, StorageCapacityScoring on as
in v1.37) and ValidateVolumeBindingArgsWithOptions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import ArgsError, FieldErrors, check_args_object, field
from scheduler.plugins.helper.shape import (
    MAX_SHAPE_SCORE,
    MAX_SHAPE_UTILIZATION,
    decode_shape,
    validate_shape,
)

BIND_TIMEOUT = "bindTimeoutSeconds"
SHAPE = "shape"
DEFAULT_BIND_TIMEOUT_SECONDS = 600
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


def decode_args(raw: Mapping[str, Any] | None) -> VolumeBindingArgs:
    """Strict decoding, defaults (600 s; the default shape when none is given), validation."""
    args = check_args_object(raw, (BIND_TIMEOUT, SHAPE))
    timeout = _bind_timeout(args)
    points = decode_shape(args.get(SHAPE), SHAPE)
    if not points:
        points = list(DEFAULT_SHAPE)
    errs = FieldErrors()
    if timeout < 0:
        errs.invalid(
            BIND_TIMEOUT, timeout, "invalid BindTimeoutSeconds, should not be a negative value"
        )
    validate_shape(points, SHAPE, errs)
    errs.raise_if_any()
    return VolumeBindingArgs(timeout, tuple(points))
