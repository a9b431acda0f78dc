"""VolumeBindingArgs: v1 defaults (SetDefaults_VolumeBindingArgs, StorageCapacityScoring on as
in v1.37) and ValidateVolumeBindingArgsWithOptions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import FieldErrors, check_args_object, check_int64
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


def decode_args(raw: Mapping[str, Any] | None) -> VolumeBindingArgs:
    """Strict decoding, defaults (600 s; the default shape when none is given), validation."""
    args = check_args_object(raw, (BIND_TIMEOUT, SHAPE))
    timeout = check_int64(args, BIND_TIMEOUT, "", DEFAULT_BIND_TIMEOUT_SECONDS)
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
