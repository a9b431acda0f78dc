"""CoschedulingArgs: scheduler-plugins' field names, v1 defaults (SetDefaults_CoschedulingArgs)
and ValidateCoschedulingArgs' messages, so their configurations load unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import FieldErrors, check_args_object, check_int64

PERMIT_WAITING_TIME = "permitWaitingTimeSeconds"
BACKOFF = "podGroupBackoffSeconds"
REJECT_PERCENTAGE = "podGroupRejectPercentage"

DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0
DEFAULT_POD_GROUP_REJECT_PERCENTAGE = 10


@dataclass(frozen=True)
class CoschedulingArgs:
    permit_waiting_time_seconds: int = DEFAULT_PERMIT_WAITING_TIME_SECONDS
    """How long placed members wait at Permit when the group sets no scheduleTimeoutSeconds."""
    pod_group_backoff_seconds: int = DEFAULT_POD_GROUP_BACKOFF_SECONDS
    """How long a group that failed is held before its members are tried again (0: none)."""
    pod_group_reject_percentage: int = DEFAULT_POD_GROUP_REJECT_PERCENTAGE
    """PostFilter rejects the group only when more than this share of minMember is unplaced."""


def decode_args(raw: Mapping[str, Any] | None) -> CoschedulingArgs:
    """Strict decoding, defaults (60 s, 0 s, 10 %), validation."""
    args = check_args_object(raw, (PERMIT_WAITING_TIME, BACKOFF, REJECT_PERCENTAGE))
    decoded = CoschedulingArgs(
        check_int64(args, PERMIT_WAITING_TIME, "", DEFAULT_PERMIT_WAITING_TIME_SECONDS),
        check_int64(args, BACKOFF, "", DEFAULT_POD_GROUP_BACKOFF_SECONDS),
        check_int64(args, REJECT_PERCENTAGE, "", DEFAULT_POD_GROUP_REJECT_PERCENTAGE),
    )
    errs = FieldErrors()
    if decoded.permit_waiting_time_seconds < 0:
        errs.invalid(
            PERMIT_WAITING_TIME, decoded.permit_waiting_time_seconds, "must be greater than 0"
        )
    if decoded.pod_group_backoff_seconds < 0:
        errs.invalid(BACKOFF, decoded.pod_group_backoff_seconds, "must be greater than 0")
    if not 0 <= decoded.pod_group_reject_percentage <= 100:
        errs.invalid(
            REJECT_PERCENTAGE, decoded.pod_group_reject_percentage, "must be between 0 and 100"
        )
    errs.raise_if_any()
    return decoded
