"""NodeAffinityArgs: strict decoding of `addedAffinity`, validated as kube-scheduler validates it.

Errors carry the field path relative to the args and kube-scheduler's wording, so a bad
KubeSchedulerConfiguration is reported the same way by both schedulers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.labels import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    IN,
    LT,
    NOT_IN,
    NodeSelector,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Requirement,
)
from scheduler.framework.registry import ArgsError

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_NODE_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
_FIELD_OPERATORS = (IN, NOT_IN)

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_RE = re.compile(f"^{_LABEL_KEY_FMT}$")
_LABEL_VALUE_RE = re.compile(f"^({_LABEL_KEY_FMT})?$")
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN_RE = re.compile(f"^{_DNS_SUBDOMAIN_FMT}$")
_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an"
    " alphanumeric character"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or"
    " '.', and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or"
    " '.', and must start and end with an alphanumeric character"
)


@dataclass(frozen=True)
class NodeAffinityArgs:
    """The profile-wide affinity every pod must also satisfy (required) or is scored by."""

    added_required: NodeSelector | None = None
    added_preferred: tuple[PreferredSchedulingTerm, ...] = ()


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = "".join(f"'{e}', " if i == 0 else f" or '{e}', " for i, e in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _go_value(value: Any) -> str:
    """How field.Error renders a bad value: strings quoted, numbers bare, the rest as JSON."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


class _Errors:
    """Collects field errors in kube-scheduler's "path: Invalid value: v: detail" form."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.items.append((path, f"Invalid value: {_go_value(value)}: {detail}"))

    def not_supported(self, path: str, value: Any, supported: tuple[str, ...]) -> None:
        quoted = ", ".join(json.dumps(v) for v in supported)
        self.items.append(
            (path, f"Unsupported value: {_go_value(value)}: supported values: {quoted}")
        )

    def raise_if_any(self) -> None:
        if len(self.items) == 1:
            raise ArgsError(*self.items[0])
        if self.items:
            joined = ", ".join(f"{path}: {msg}" for path, msg in self.items)
            raise ArgsError("", f"[{joined}]")


def _label_key_errors(key: str) -> list[str]:
    parts = key.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS_SUBDOMAIN_RE.match(prefix):
                errs.append(
                    "prefix part " + _regex_error(_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com")
                )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _LABEL_KEY_RE.match(name):
        errs.append(
            "name part " + _regex_error(_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def _label_value_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 bytes")
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            _regex_error(
                _VALUE_MSG, _LABEL_KEY_FMT.join(("(", ")?")), "MyValue", "my_value", "12345"
            )
        )
    return errs


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): optional sign and ASCII digits only."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


def _obj(raw: Any, path: str, known: tuple[str, ...]) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ArgsError(path, f"Invalid value: {_go_value(raw)}: must be an object")
    for key in raw:
        if key not in known:
            raise ArgsError(f"{path}.{key}" if path else key, f'unknown field "{key}"')
    return raw


def _list(raw: Any, path: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ArgsError(path, f"Invalid value: {_go_value(raw)}: must be a list")
    return raw


def _strings(raw: Any, path: str) -> list[str]:
    values = _list(raw, path)
    if not all(isinstance(v, str) for v in values):
        raise ArgsError(path, f"Invalid value: {_go_value(values)}: must be a list of strings")
    return values


def _expression(raw: Any, path: str, errs: _Errors) -> Requirement | None:
    expr = _obj(raw, path, ("key", "operator", "values"))
    key, operator = expr.get("key", ""), expr.get("operator", "")
    if not isinstance(key, str) or not isinstance(operator, str):
        raise ArgsError(path, "key and operator must be strings")
    values = _strings(expr.get("values"), f"{path}.values")
    if operator not in _NODE_OPERATORS:
        errs.not_supported(f"{path}.operator", operator, _NODE_OPERATORS)
        return None
    before = len(errs.items)
    key_errs = _label_key_errors(key)
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
            parsed = _go_int(value)
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


def _field_expression(raw: Any, path: str, errs: _Errors) -> Requirement | None:
    expr = _obj(raw, path, ("key", "operator", "values"))
    key, operator = expr.get("key", ""), expr.get("operator", "")
    if not isinstance(key, str) or not isinstance(operator, str):
        raise ArgsError(path, "key and operator must be strings")
    values = _strings(expr.get("values"), f"{path}.values")
    if operator not in _FIELD_OPERATORS:
        errs.not_supported(f"{path}.operator", operator, _FIELD_OPERATORS)
        return None
    if len(values) != 1:
        errs.invalid(f"{path}.values", values, "must have one element")
        return None
    return Requirement(key, operator, frozenset(values))


def _term(raw: Any, path: str, errs: _Errors) -> NodeSelectorTerm | None:
    """One term; None (with errors recorded) when it does not parse."""
    term = _obj(raw, path, ("matchExpressions", "matchFields"))
    before = len(errs.items)
    exprs = [
        _expression(e, f"{path}.matchExpressions[{i}]", errs)
        for i, e in enumerate(_list(term.get("matchExpressions"), f"{path}.matchExpressions"))
    ]
    fields = [
        _field_expression(e, f"{path}.matchFields[{i}]", errs)
        for i, e in enumerate(_list(term.get("matchFields"), f"{path}.matchFields"))
    ]
    if len(errs.items) > before:
        return None
    return NodeSelectorTerm(
        tuple(e for e in exprs if e is not None), tuple(f for f in fields if f is not None)
    )


def _required(raw: Any, path: str, errs: _Errors) -> NodeSelector:
    selector = _obj(raw, path, ("nodeSelectorTerms",))
    terms = []
    for i, raw_term in enumerate(
        _list(selector.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    ):
        term = _term(raw_term, f"{path}.nodeSelectorTerms[{i}]", errs)
        if term is not None and (term.expressions or term.fields):
            terms.append(term)  # an empty term selects nothing, as kube-scheduler drops it
    return NodeSelector(tuple(terms))


def _preferred(raw: Any, path: str, errs: _Errors) -> tuple[PreferredSchedulingTerm, ...]:
    result = []
    for i, raw_item in enumerate(_list(raw, path)):
        item_path = f"{path}[{i}]"
        item = _obj(raw_item, item_path, ("weight", "preference"))
        weight = item.get("weight", 0)
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise ArgsError(f"{item_path}.weight", f"Invalid value: {_go_value(weight)}")
        term = _term(item.get("preference"), f"{item_path}.preference", errs)
        # kube-scheduler ignores zero-weight and empty terms: they can never add to a score.
        if weight != 0 and term is not None and (term.expressions or term.fields):
            result.append(PreferredSchedulingTerm(weight, term))
    return tuple(result)


def decode_args(raw: Mapping[str, Any] | None) -> NodeAffinityArgs:
    """v1 NodeAffinityArgs (no defaults to apply); unknown fields and invalid selectors fail."""
    args = _obj(raw, "", ("apiVersion", "kind", "addedAffinity"))
    if args.get("addedAffinity") is None:
        return NodeAffinityArgs()
    added = _obj(args["addedAffinity"], "addedAffinity", (REQUIRED, PREFERRED))
    errs = _Errors()
    required = None
    if added.get(REQUIRED) is not None:
        required = _required(added[REQUIRED], f"addedAffinity.{REQUIRED}", errs)
    preferred = _preferred(added.get(PREFERRED), f"addedAffinity.{PREFERRED}", errs)
    errs.raise_if_any()
    return NodeAffinityArgs(required, preferred)
