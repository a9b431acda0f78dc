"""Kubernetes' CEL list and regex functions (k8s.io/apiserver pkg/cel/library lists.go and
regex.go) written for cel-expr-python, because cel-cpp ships neither: `isSorted`, `sum`, `min`,
`max`, `indexOf`, `lastIndexOf` on lists and `find`, `findAll` on strings; and the DRA
library's `includes` (declared in the scheduler's environment whatever DRAListTypeAttributes
says: upstream compiles selectors in its StoredExpressions environment, which ignores feature
gates).

They are declared as one CEL extension (not as plain functions) so that `indexOf` and
`lastIndexOf` add list overloads next to the strings extension's string overloads, as the
upstream environment has both. Overloads are typed per element type, so the type checker refuses
what upstream's refuses (`[1, 2].sum()` is an int, `["a"].sum()` does not compile).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Any

from cel_expr_python import cel as _cel

from scheduler.plugins.dynamic_resources.cel_net import network_functions
from scheduler.plugins.dynamic_resources.cel_values import CELValueError

_T = _cel.Type
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

_NUMBERS = (int, float)


def _elements(values: Sequence[Any], kinds: tuple[type, ...]) -> Sequence[Any]:
    """The list when all its elements are of one of the kinds (upstream's overloads are per
    element type; a list the checker cannot type, such as an attribute's, is checked here)."""
    first = type(values[0]) if values else None
    for value in values:
        if isinstance(value, bool) and bool not in kinds:
            raise CELValueError("no such overload")
        if not isinstance(value, kinds) or (first is not None and type(value) is not first):
            raise CELValueError("no such overload")
    return values


_COMPARABLE = (int, float, bool, str, bytes)


def _is_sorted(values: Sequence[Any]) -> bool:
    values = _elements(values, _COMPARABLE)
    return all(a <= b for a, b in pairwise(values))


def _sum(values: Sequence[Any]) -> Any:
    """An empty list sums to the int 0 (upstream: the zero of the list's element type)."""
    values = _elements(values, _NUMBERS)
    result: Any = 0
    for value in values:
        result += value
        if isinstance(result, int) and not _INT64_MIN <= result <= _INT64_MAX:
            raise CELValueError("integer overflow")
    return result


def _min(values: Sequence[Any]) -> Any:
    if not values:
        raise CELValueError("min(list) argument must not be empty")
    return min(_elements(values, _COMPARABLE))


def _max(values: Sequence[Any]) -> Any:
    if not values:
        raise CELValueError("max(list) argument must not be empty")
    return max(_elements(values, _COMPARABLE))


def _index_of(values: Sequence[Any], item: Any) -> int:
    for i, value in enumerate(values):
        if value == item and type(value) is type(item):
            return i
    return -1


def _last_index_of(values: Sequence[Any], item: Any) -> int:
    for i in range(len(values) - 1, -1, -1):
        if values[i] == item and type(values[i]) is type(item):
            return i
    return -1


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise CELValueError(f"Illegal regex: error parsing regexp: {err.msg}: `{pattern}`") from err


def _find_all_matches(text: str, pattern: str, limit: int) -> list[str]:
    """Go's Regexp.FindAllString: an empty match right after the previous match is skipped."""
    if limit == 0:
        return []
    found: list[str] = []
    previous_end = -1
    for match in _regex(pattern).finditer(text):
        if match.start() == match.end() == previous_end:
            continue
        found.append(match.group(0))
        previous_end = match.end()
        if 0 < limit <= len(found):
            break
    return found


def _find(text: str, pattern: str) -> str:
    match = _regex(pattern).search(text)
    return "" if match is None else match.group(0)


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    return _find_all_matches(text, pattern, limit)


#: resource.k8s.io/v1 ResourceSliceMaxAttributeValuesPerDevice: the longest list `includes`
#: accepts.
MAX_INCLUDES_LIST = 48


def _includes(target: Any, item: Any) -> bool:
    """k8s.io/dynamic-resource-allocation cel includesFunc: membership in a list, equality for
    any other value."""
    if isinstance(target, list):
        if len(target) > MAX_INCLUDES_LIST:
            raise CELValueError(
                "'includes' function cannot be applied to lists longer than "
                f"{MAX_INCLUDES_LIST} values"
            )
        return any(_equal(value, item) for value in target)
    return _equal(target, item)


def _equal(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, numbers) and isinstance(b, numbers):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _member(name: str, ret: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return _cel.Overload(name, ret, params, is_member=True, impl=impl)


def _list_functions() -> list[Any]:
    """One overload per function: cel-cpp dispatches on the argument's kind (list), so typed
    overloads per element type cannot coexist, and the binding has no type parameters. The
    results are therefore dyn; a list of the wrong element type fails when evaluated."""
    decl, lst, dyn = _cel.FunctionDecl, _T.List(_T.DYN), _T.DYN
    return [
        decl("isSorted", [_member("list_is_sorted", _T.BOOL, [lst], _is_sorted)]),
        decl("sum", [_member("list_sum", dyn, [lst], _sum)]),
        decl("min", [_member("list_min", dyn, [lst], _min)]),
        decl("max", [_member("list_max", dyn, [lst], _max)]),
        decl("indexOf", [_member("list_index_of", _T.INT, [lst, dyn], _index_of)]),
        decl("lastIndexOf", [_member("list_last_index_of", _T.INT, [lst, dyn], _last_index_of)]),
    ]


def _regex_functions() -> list[Any]:
    s, decl = _T.STRING, _cel.FunctionDecl
    strings = _T.List(s)
    return [
        decl("find", [_member("string_find_string", s, [s, s], _find)]),
        decl(
            "findAll",
            [
                _member("string_find_all_string", strings, [s, s], _find_all),
                _member("string_find_all_string_int", strings, [s, s, _T.INT], _find_all),
            ],
        ),
    ]


def kubernetes_library() -> Any:
    """The CEL extension holding Kubernetes' list, regex, IP, CIDR and URL functions."""
    includes = _cel.FunctionDecl(
        "includes", [_member("dra_includes_dyn_dyn", _T.BOOL, [_T.DYN, _T.DYN], _includes)]
    )
    functions = [*_list_functions(), *_regex_functions(), *network_functions(), includes]
    return _cel.CelExtension("k8s.io/apiserver/library", functions)
