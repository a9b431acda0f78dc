"""PodTopologySpreadArgs: strict decoding, v1 defaults and kube-scheduler's validation
(ValidatePodTopologySpreadArgs), with its field paths and wording."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    ArgsError,
    FieldErrors,
    SelectorError,
    TopologySpreadConstraint,
    check_args_object,
    check_list,
    check_object,
    label_key_errors,
    parse_spread_constraint,
)

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"

#: kube-scheduler's systemDefaultConstraints, used with `defaultingType: System`.
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(3, LABEL_HOSTNAME, SCHEDULE_ANYWAY),
    TopologySpreadConstraint(5, LABEL_ZONE, SCHEDULE_ANYWAY),
)

_CONSTRAINT_FIELDS = (
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
)
_ACTIONS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    """The constraints applied to pods that have none; `system_defaulted` when they are
    kube-scheduler's built-in ones (which changes how scoring treats nodes lacking a key)."""

    default_constraints: tuple[TopologySpreadConstraint, ...] = SYSTEM_DEFAULT_CONSTRAINTS
    defaulting_type: str = SYSTEM_DEFAULTING

    @property
    def system_defaulted(self) -> bool:
        return self.defaulting_type == SYSTEM_DEFAULTING


def _constraint(raw: Any, path: str, errs: FieldErrors) -> TopologySpreadConstraint:
    obj = check_object(raw, path, _CONSTRAINT_FIELDS)
    max_skew = obj.get("maxSkew", 0)
    if isinstance(max_skew, bool) or not isinstance(max_skew, int):
        raise ArgsError(f"{path}.maxSkew", f"Invalid value: {max_skew!r}: must be an integer")
    for key in ("topologyKey", "whenUnsatisfiable"):
        if not isinstance(obj.get(key, ""), str):
            raise ArgsError(f"{path}.{key}", "must be a string")
    try:
        parsed = parse_spread_constraint(obj)
    except (SelectorError, TypeError, ValueError) as err:
        raise ArgsError(path, str(err)) from err
    if max_skew <= 0:
        errs.invalid(f"{path}.maxSkew", max_skew, "not in valid range (0, inf)")
    key = parsed.topology_key
    if not key:
        errs.required(f"{path}.topologyKey", "can not be empty")
    else:
        for message in label_key_errors(key):
            errs.invalid(f"{path}.topologyKey", key, message)
    action = parsed.when_unsatisfiable
    if not action:
        errs.required(f"{path}.whenUnsatisfiable", "can not be empty")
    elif action not in _ACTIONS:
        errs.not_supported(f"{path}.whenUnsatisfiable", action, _ACTIONS)
    if obj.get("labelSelector") is not None:
        errs.forbidden(
            f"{path}.labelSelector",
            "constraint must not define a selector, as they deduced for each pod",
        )
    return parsed


def decode_args(raw: Mapping[str, Any] | None) -> PodTopologySpreadArgs:
    """v1 PodTopologySpreadArgs: `defaultingType` defaults to System; validated as
    kube-scheduler validates them (all errors reported together)."""
    obj = check_args_object(raw, ("defaultConstraints", "defaultingType"))
    defaulting = obj.get("defaultingType") or SYSTEM_DEFAULTING
    if not isinstance(defaulting, str):
        raise ArgsError("defaultingType", "must be a string")
    errs = FieldErrors()
    raw_constraints = check_list(obj.get("defaultConstraints"), "defaultConstraints")
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errs.not_supported("defaultingType", defaulting, (SYSTEM_DEFAULTING, LIST_DEFAULTING))
    elif defaulting == SYSTEM_DEFAULTING and raw_constraints:
        errs.invalid("defaultingType", defaulting, "when .defaultConstraints are not empty")
    constraints: list[TopologySpreadConstraint] = []
    for i, item in enumerate(raw_constraints):
        path = f"defaultConstraints[{i}]"
        constraint = _constraint(item, path, errs)
        for earlier in constraints:
            if (earlier.topology_key, earlier.when_unsatisfiable) == (
                constraint.topology_key,
                constraint.when_unsatisfiable,
            ):
                errs.duplicate(
                    path, f"{{{constraint.topology_key}, {constraint.when_unsatisfiable}}}"
                )
                break
        constraints.append(constraint)
    errs.raise_if_any()
    if defaulting == SYSTEM_DEFAULTING:
        return PodTopologySpreadArgs()
    return PodTopologySpreadArgs(tuple(constraints), LIST_DEFAULTING)
