"""NodeAffinityArgs: strict decoding of `addedAffinity`, validated as kube-scheduler validates it.

Errors carry the field path relative to the args and kube-scheduler's wording, so a bad
KubeSchedulerConfiguration is reported the same way by both schedulers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    IN,
    LABEL_KEY_FMT,
    LT,
    NOT_IN,
    ArgsError,
    FieldErrors,
    NodeSelector,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Requirement,
    check_list,
    check_object,
    field,
    label_key_errors,
    parse_go_int,
    regex_error,
)

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_NODE_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
_FIELD_OPERATORS = (IN, NOT_IN)

_LABEL_VALUE_RE = re.compile(f"^({LABEL_KEY_FMT})?$")
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or"
    " '.', and must start and end with an alphanumeric character"
)


@dataclass(frozen=True)
class NodeAffinityArgs:
    """The profile-wide affinity every pod must also satisfy (required) or is scored by."""

    added_required: NodeSelector | None = None
    added_preferred: tuple[PreferredSchedulingTerm, ...] = ()


def _label_value_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 bytes")
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            regex_error(_VALUE_MSG, LABEL_KEY_FMT.join(("(", ")?")), "MyValue", "my_value", "12345")
        )
    return errs


def _strings(raw: Any, path: str) -> list[str]:
    values = check_list(raw, path)
    if not all(isinstance(v, str) for v in values):
        raise ArgsError(path, field.invalid(values, "must be a list of strings"))
    return values


def _requirement_fields(
    raw: Any, path: str, errs: FieldErrors, operators: tuple[str, ...]
) -> tuple[str, str, list[str]] | None:
    """A requirement's key, operator and values; None (error recorded) for another operator."""
    expr = check_object(raw, path, ("key", "operator", "values"))
    key, operator = expr.get("key", ""), expr.get("operator", "")
    if not isinstance(key, str) or not isinstance(operator, str):
        raise ArgsError(path, "key and operator must be strings")
    values = _strings(expr.get("values"), f"{path}.values")
    if operator not in operators:
        errs.not_supported(f"{path}.operator", operator, operators)
        return None
    return key, operator, values


def _expression(raw: Any, path: str, errs: FieldErrors) -> Requirement | None:
    decoded = _requirement_fields(raw, path, errs, _NODE_OPERATORS)
    if decoded is None:
        return None
    key, operator, values = decoded
    before = len(errs.items)
    key_errs = label_key_errors(key)
    if key_errs:
        errs.invalid(f"{path}.key", key, "; ".join(key_errs))
    number = 0
    if operator in (IN, NOT_IN) and not values:
        errs.invalid(
            f"{path}.values", values, "for 'in', 'notin' operators, values set can't be empty"
        )
    elif operator in (EXISTS, DOES_NOT_EXIST) and values:
        errs.invalid(
            f"{path}.values", values, "values set must be empty for exists and does not exist"
        )
    elif operator in (GT, LT):
        if len(values) != 1:
            errs.invalid(
                f"{path}.values", values, "for 'Gt', 'Lt' operators, exactly one value is required"
            )
        for i, value in enumerate(values):
            parsed = parse_go_int(value)
            if parsed is None:
                errs.invalid(
                    f"{path}.values[{i}]",
                    value,
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                )
            else:
                number = parsed
    for i, value in enumerate(values):
        value_errs = _label_value_errors(value)
        if value_errs:
            errs.invalid(f"{path}.values[{i}][{key}]", value, "; ".join(value_errs))
    if len(errs.items) > before:
        return None
    return Requirement(key, operator, frozenset(values), number)


def _field_expression(raw: Any, path: str, errs: FieldErrors) -> Requirement | None:
    decoded = _requirement_fields(raw, path, errs, _FIELD_OPERATORS)
    if decoded is None:
        return None
    key, operator, values = decoded
    if len(values) != 1:
        errs.invalid(f"{path}.values", values, "must have one element")
        return None
    return Requirement(key, operator, frozenset(values))


def _term(raw: Any, path: str, errs: FieldErrors) -> NodeSelectorTerm | None:
    """One term; None (with errors recorded) when it does not parse."""
    term = check_object(raw, path, ("matchExpressions", "matchFields"))
    before = len(errs.items)
    exprs = [
        _expression(e, f"{path}.matchExpressions[{i}]", errs)
        for i, e in enumerate(check_list(term.get("matchExpressions"), f"{path}.matchExpressions"))
    ]
    fields = [
        _field_expression(e, f"{path}.matchFields[{i}]", errs)
        for i, e in enumerate(check_list(term.get("matchFields"), f"{path}.matchFields"))
    ]
    if len(errs.items) > before:
        return None
    return NodeSelectorTerm(
        tuple(e for e in exprs if e is not None), tuple(f for f in fields if f is not None)
    )


def _required(raw: Any, path: str, errs: FieldErrors) -> NodeSelector:
    selector = check_object(raw, path, ("nodeSelectorTerms",))
    terms = []
    for i, raw_term in enumerate(
        check_list(selector.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    ):
        term = _term(raw_term, f"{path}.nodeSelectorTerms[{i}]", errs)
        if term is not None and (term.expressions or term.fields):
            terms.append(term)  # an empty term selects nothing, as kube-scheduler drops it
    return NodeSelector(tuple(terms))


def _preferred(raw: Any, path: str, errs: FieldErrors) -> tuple[PreferredSchedulingTerm, ...]:
    result = []
    for i, raw_item in enumerate(check_list(raw, path)):
        item_path = f"{path}[{i}]"
        item = check_object(raw_item, item_path, ("weight", "preference"))
        weight = item.get("weight", 0)
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise ArgsError(f"{item_path}.weight", f"Invalid value: {field.go_value(weight)}")
        term = _term(item.get("preference"), f"{item_path}.preference", errs)
        # kube-scheduler ignores zero-weight and empty terms: they can never add to a score.
        if weight != 0 and term is not None and (term.expressions or term.fields):
            result.append(PreferredSchedulingTerm(weight, term))
    return tuple(result)


def decode_args(raw: Mapping[str, Any] | None) -> NodeAffinityArgs:
    """v1 NodeAffinityArgs (no defaults to apply); unknown fields and invalid selectors fail."""
    args = check_object(raw, "", ("apiVersion", "kind", "addedAffinity"))
    if args.get("addedAffinity") is None:
        return NodeAffinityArgs()
    added = check_object(args["addedAffinity"], "addedAffinity", (REQUIRED, PREFERRED))
    errs = FieldErrors()
    required = None
    if added.get(REQUIRED) is not None:
        required = _required(added[REQUIRED], f"addedAffinity.{REQUIRED}", errs)
    preferred = _preferred(added.get(PREFERRED), f"addedAffinity.{PREFERRED}", errs)
    errs.raise_if_any()
    return NodeAffinityArgs(required, preferred)
