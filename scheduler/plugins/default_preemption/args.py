"""DefaultPreemptionArgs: v1 defaults (10 % and 100 candidate nodes) and kube-scheduler's checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import FieldErrors, check_args_object, check_int

PERCENTAGE = "minCandidateNodesPercentage"
ABSOLUTE = "minCandidateNodesAbsolute"


@dataclass(frozen=True)
class PreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


def decode_args(raw: Mapping[str, Any] | None) -> PreemptionArgs:
    """Strict decoding, SetDefaults_DefaultPreemptionArgs, then ValidateDefaultPreemptionArgs."""
    args = check_args_object(raw, (PERCENTAGE, ABSOLUTE))
    defaults = PreemptionArgs()
    percentage = check_int(args, PERCENTAGE, "", defaults.min_candidate_nodes_percentage)
    absolute = check_int(args, ABSOLUTE, "", defaults.min_candidate_nodes_absolute)
    errs = FieldErrors()
    if not 0 <= percentage <= 100:
        errs.invalid(PERCENTAGE, percentage, "not in valid range [0, 100]")
    if absolute < 0:
        errs.invalid(ABSOLUTE, absolute, "not in valid range [0, inf)")
    if percentage == 0 and absolute == 0:
        errs.invalid(
            PERCENTAGE, percentage, "cannot be zero at the same time as minCandidateNodesAbsolute"
        )
        errs.invalid(
            ABSOLUTE, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"
        )
    errs.raise_if_any()
    return PreemptionArgs(percentage, absolute)
