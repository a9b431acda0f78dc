"""Label selectors and node selector terms, evaluated as Kubernetes evaluates them.

Selectors are compiled once when an object is parsed; `matches` is then a few dict lookups.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"

_LABEL_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})
_NODE_OPERATORS = _LABEL_OPERATORS | {GT, LT}


_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = 1 << 63


def parse_go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): digits with an optional sign only (no "1_0", no spaces)."""
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


class SelectorError(ValueError):
    """A selector that Kubernetes would reject or could never evaluate."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `key op values` clause."""

    key: str
    operator: str
    values: frozenset[str]
    number: int = 0  # the parsed value of Gt/Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN:
            found = labels.get(self.key)
            return found is not None and found in self.values
        if op == NOT_IN:
            found = labels.get(self.key)
            return found is None or found not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        found = labels.get(self.key)
        if found is None:
            return False
        actual = parse_go_int(found)
        if actual is None:
            return False
        return actual > self.number if op == GT else actual < self.number


def _requirement(raw: Mapping[str, Any], operators: frozenset[str]) -> Requirement:
    key = raw.get("key")
    operator = raw.get("operator")
    values = raw.get("values") or []
    if not isinstance(key, str) or not key:
        raise SelectorError("key: Required value")
    if operator not in operators:
        raise SelectorError(f"operator: Unsupported value: {operator!r}")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise SelectorError("values: must be a list of strings")
    if operator in (IN, NOT_IN) and not values:
        raise SelectorError(
            f"values: Required value: must be specified when `operator` is {operator!r}"
        )
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        raise SelectorError(f"values: may not be specified when `operator` is {operator!r}")
    number = 0
    if operator in (GT, LT):
        if len(values) != 1:
            raise SelectorError(f"values: must have exactly one element for {operator!r}")
        parsed = parse_go_int(values[0])
        if parsed is None:
            raise SelectorError(f"values[0]: invalid integer {values[0]!r}")
        number = parsed
    return Requirement(key, operator, frozenset(values), number)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector; `None` where the API has nil means "matches nothing"."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(req.matches(labels) for req in self.requirements)

    def is_empty(self) -> bool:
        """An empty selector matches every object."""
        return not self.requirements

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> LabelSelector | None:
        if raw is None:
            return None
        reqs = [
            Requirement(key, IN, frozenset([str(val)]))
            for key, val in sorted((raw.get("matchLabels") or {}).items())
        ]
        reqs.extend(
            _requirement(expr, _LABEL_OPERATORS) for expr in raw.get("matchExpressions") or []
        )
        return cls(tuple(reqs))


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """ANDed label expressions and `metadata.name` field expressions."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if not self.expressions and not self.fields:
            return False  # an empty term matches no objects
        for req in self.expressions:
            if not req.matches(labels):
                return False
        if self.fields:
            name_field = {"metadata.name": node_name}
            return all(req.matches(name_field) for req in self.fields)
        return True

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> NodeSelectorTerm:
        exprs = tuple(
            _requirement(expr, _NODE_OPERATORS) for expr in raw.get("matchExpressions") or []
        )
        fields = []
        for expr in raw.get("matchFields") or []:
            req = _requirement(expr, _NODE_OPERATORS)
            if req.key != "metadata.name":
                raise SelectorError(f"matchFields.key: Invalid value: {req.key!r}")
            if req.operator not in (IN, NOT_IN) or len(req.values) != 1:
                raise SelectorError(
                    "matchFields: must be 'In' or 'NotIn' with exactly one value for metadata.name"
                )
            fields.append(req)
        return cls(exprs, tuple(fields))


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """ORed node selector terms (required node affinity)."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        return any(term.matches(node_name, labels) for term in self.terms)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> NodeSelector:
        return cls(tuple(NodeSelectorTerm.parse(t) for t in raw.get("nodeSelectorTerms") or []))


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    term: NodeSelectorTerm


def selector_from_set(labels: Mapping[str, str]) -> LabelSelector:
    """A selector that matches exactly these label key/values (like labels.SelectorFromSet)."""
    return LabelSelector(
        tuple(Requirement(k, IN, frozenset([v])) for k, v in sorted(labels.items()))
    )


def matches_all(selectors: Iterable[LabelSelector], labels: Mapping[str, str]) -> bool:
    return all(s.matches(labels) for s in selectors)
