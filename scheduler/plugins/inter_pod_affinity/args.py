"""InterPodAffinityArgs: v1 defaults and kube-scheduler's ValidateInterPodAffinityArgs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import ArgsError, FieldErrors, check_args_object, check_int, field

HARD_WEIGHT = "hardPodAffinityWeight"
IGNORE_PREFERRED = "ignorePreferredTermsOfExistingPods"
MIN_HARD_WEIGHT = 0
MAX_HARD_WEIGHT = 100


@dataclass(frozen=True)
class InterPodAffinityArgs:
    #: Score weight of an existing pod's required affinity term the incoming pod matches.
    hard_pod_affinity_weight: int = 1
    #: Skip scoring when the incoming pod has no preferred (anti-)affinity of its own.
    ignore_preferred_terms_of_existing_pods: bool = False


def decode_args(raw: Mapping[str, Any] | None) -> InterPodAffinityArgs:
    """Strict decoding, SetDefaults_InterPodAffinityArgs (weight 1 when absent), validation."""
    args = check_args_object(raw, (HARD_WEIGHT, IGNORE_PREFERRED))
    defaults = InterPodAffinityArgs()
    weight = check_int(args, HARD_WEIGHT, "", defaults.hard_pod_affinity_weight)
    ignore = args.get(IGNORE_PREFERRED, False)
    if ignore is None:
        ignore = False
    if not isinstance(ignore, bool):
        raise ArgsError(IGNORE_PREFERRED, field.invalid(ignore, "must be a boolean"))
    errs = FieldErrors()
    if not MIN_HARD_WEIGHT <= weight <= MAX_HARD_WEIGHT:
        errs.invalid(
            HARD_WEIGHT, weight, f"not in valid range [{MIN_HARD_WEIGHT}, {MAX_HARD_WEIGHT}]"
        )
    errs.raise_if_any()
    return InterPodAffinityArgs(weight, ignore)
