"""CEL device selectors, evaluated by cel-expr-python (the CEL team's binding of cel-cpp) with
Kubernetes' extension functions and the DRA `device` variable (k8s.io/dynamic-resource-allocation
cel/compile.go): `device.driver`, `device.attributes[domain][name]`, `device.capacity[domain]
[name]` (a quantity), `device.allowMultipleAllocations`. Attribute and capacity names without a
domain are under the driver's name. Looking up a domain the device does not have yields an empty
map (upstream's map with a default), so `device.attributes["other"].x` fails with "no such key:
x" while `"other" in device.attributes` is false.

Expressions are compiled once per text and kept in an LRU cache (COMPILE_CACHE_SIZE entries;
upstream keeps 10 per scheduler, this one is larger because compiling through cel-cpp costs
~100 µs). Why this library, and its measured cost, is in docs/dra.md ("CEL").
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cel_expr_python import cel as _cel
from cel_expr_python.ext import ext_bindings, ext_strings

from scheduler.framework import ATTR_BOOL, ATTR_INT, ATTR_STRING, ATTR_VERSION, Device
from scheduler.plugins.dynamic_resources import cel_values as v
from scheduler.plugins.dynamic_resources.cel_library import kubernetes_library

#: resource.k8s.io/v1 CELSelectorExpressionMaxCost: upstream's runtime cost limit.
MAX_COST = 1_000_000
#: resource.k8s.io/v1 ResourceSliceMaxAttributesAndCapacitiesPerDevice: bounds every map a
#: selector can iterate, which is what the static cost bound below relies on.
MAX_ELEMENTS = 32
COMPILE_CACHE_SIZE = 256

_T = _cel.Type
_QUANTITY = _T.Map(_T.STRING, _T.STRING)
_MACROS = re.compile(
    r"\.\s*(all|exists_one|exists|map|filter|transformList|transformMapEntry|transformMap|sortBy)"
    r"\s*\("
)
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_DOMAIN_INDEX = re.compile(r'\b(attributes|capacity)\s*\[\s*"((?:[^"\\]|\\.)*)"\s*\]')
_KEY_NOT_FOUND = re.compile(r'Key not found in map\s*:\s*"?(.*?)"?\s*$')


class CELError(Exception):
    """A selector that cannot be compiled or fails at run time; the message says why."""


def _overload(
    name: str, ret: Any, params: list[Any], impl: Callable[..., Any], member: bool = False
) -> Any:
    return _cel.Overload(name, ret, params, is_member=member, impl=impl)


def _functions() -> list[Any]:
    q, s, i, b, d = _QUANTITY, _T.STRING, _T.INT, _T.BOOL, _T.DOUBLE
    decl = _cel.FunctionDecl
    return [
        decl("quantity", [_overload("string_to_quantity", q, [s], v.quantity)]),
        decl("isQuantity", [_overload("is_quantity_string", b, [s], v.is_quantity)]),
        decl("sign", [_overload("quantity_sign", i, [q], v.quantity_sign)]),
        decl("asApproximateFloat", [_overload("q_float", d, [q], v.quantity_as_float, True)]),
        decl("asInteger", [_overload("quantity_get_int", i, [q], v.quantity_as_integer, True)]),
        decl("isInteger", [_overload("quantity_is_integer", b, [q], v.quantity_is_integer, True)]),
        decl(
            "add",
            [
                _overload("quantity_add", q, [q, q], v.quantity_add, True),
                _overload("quantity_add_int", q, [q, i], v.quantity_add, True),
            ],
        ),
        decl(
            "sub",
            [
                _overload("quantity_sub", q, [q, q], v.quantity_sub, True),
                _overload("quantity_sub_int", q, [q, i], v.quantity_sub, True),
            ],
        ),
        # One overload per name for both types: both are maps to the type checker.
        decl("compareTo", [_overload("k8s_compare_to", i, [q, q], v.compare_to, True)]),
        decl("isGreaterThan", [_overload("k8s_greater", b, [q, q], v.is_greater_than, True)]),
        decl("isLessThan", [_overload("k8s_less", b, [q, q], v.is_less_than, True)]),
        decl(
            "semver",
            [
                _overload("string_to_semver", q, [s], v.semver_value),
                _overload("string_bool_to_semver", q, [s, b], v.semver_value),
            ],
        ),
        decl(
            "isSemver",
            [
                _overload("is_semver_string", b, [s], v.is_semver),
                _overload("is_semver_string_bool", b, [s, b], v.is_semver),
            ],
        ),
        decl("major", [_overload("semver_major", i, [q], v.semver_major, True)]),
        decl("minor", [_overload("semver_minor", i, [q], v.semver_minor, True)]),
        decl("patch", [_overload("semver_patch", i, [q], v.semver_patch, True)]),
    ]


#: cel-cpp's standard extensions in the API server's base environment (environment/base.go, all
#: of which the scheduler's StoredExpressions environment has): optional types, cel-go's lists
#: (version 2: slice, flatten, distinct, reverse, sort, sortBy, lists.range), sets and
#: two-variable comprehensions. Strings (version 2) and bindings come as extension objects.
_STANDARD_EXTENSIONS = """\
extensions:
  - name: "optional"
  - name: "lists"
    version: 2
  - name: "sets"
  - name: "two-var-comprehensions"
"""

_ENV_LOCK = threading.Lock()
_ENV: Any = None


def _env() -> Any:
    global _ENV  # noqa: PLW0603 -- one environment per process, built on first use
    with _ENV_LOCK:
        if _ENV is None:
            _ENV = _cel.NewEnv(
                config=_cel.NewEnvConfigFromYaml(_STANDARD_EXTENSIONS),
                variables={"device": _T.Map(_T.STRING, _T.DYN)},
                functions=_functions(),
                extensions=[
                    ext_bindings.ExtBindings(),
                    ext_strings.ExtStrings(version=2),
                    kubernetes_library(),
                ],
            )
        return _ENV


def _comprehension_depth(expression: str) -> int:
    """How deeply comprehension macros nest (string literals ignored)."""
    text = _STRINGS.sub('""', expression)
    depth = best = 0
    stack: list[bool] = []
    i = 0
    while i < len(text):
        match = _MACROS.match(text, i)
        if match is not None:
            stack.append(True)
            depth += 1
            best = max(best, depth)
            i = match.end()
            continue
        if text[i] == "(":
            stack.append(False)
        elif text[i] == ")" and stack and stack.pop():
            depth -= 1
        i += 1
    return best


def estimated_max_cost(expression: str) -> int:
    """A worst-case cost over devices within the v1 limits: each nested comprehension
    multiplies the cost of the expression's terms by at most MAX_ELEMENTS + 1."""
    terms = max(1, len(re.findall(r"[\w.]+|[^\s\w]", expression)))
    return int(terms * (MAX_ELEMENTS + 1) ** _comprehension_depth(expression))


@dataclass(frozen=True, slots=True, eq=False)
class CompiledSelector:
    expression: str
    program: Any
    literal_domains: Mapping[str, frozenset[str]]
    """Domains indexed with a string literal, per map ("attributes", "capacity")."""

    def matches(self, driver: str, device: Device) -> bool:
        """Whether the device satisfies the selector; CELError on a runtime error."""
        data = device_input(driver, device)
        activation: Any = device_activation(driver, device)
        for _ in range(4):
            if activation is not None:
                result = self.program.eval(activation)
            else:
                result = self.program.eval(data={"device": data})
            kind = result.type()
            if kind == _T.BOOL:
                return bool(result.value())
            if kind != _T.ERROR:
                raise CELError(
                    f"CEL result of type {kind.name().lower()} could not be converted to bool"
                )
            message = str(result.value())
            patched = self._with_default_domain(data, message)
            if patched is None:
                raise CELError(_go_wording(message))
            data, activation = patched, None
        raise CELError(_go_wording(message))

    def _with_default_domain(self, data: Mapping[str, Any], message: str) -> dict[str, Any] | None:
        """The input with the missing domain as an empty map, when the error is a lookup of a
        domain this expression names literally."""
        match = _KEY_NOT_FOUND.search(message.split(" [", 1)[0])
        if match is None:
            return None
        key = match.group(1)
        for field_name, domains in self.literal_domains.items():
            current = data[field_name]
            if key in domains and key not in current:
                patched = dict(data)
                patched[field_name] = {**current, key: {}}
                return patched
        return None


def _go_wording(message: str) -> str:
    """cel-cpp's runtime messages in cel-go's words where they differ."""
    message = re.sub(r"^[A-Z_]+: ", "", message).removesuffix(" [INVALID_ARGUMENT]")
    match = _KEY_NOT_FOUND.search(message)
    if match is not None:
        return f"no such key: {match.group(1)}"
    if "divide by zero" in message:
        return "division by zero"
    if message.startswith("No matching overloads found"):
        return "no such overload" + message.removeprefix("No matching overloads found")
    return message


#: What k8s.io/dynamic-resource-allocation's cel.EnhanceRuntimeError appends to a "no such
#: key" error, so that the pod's condition tells the selector's author how to guard the lookup.
NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
    "with has() for optional fields"
)


def enhance_runtime_error(message: str) -> str:
    """A runtime error as the allocator reports it: "no such key" errors get upstream's hint
    (once); every other message is returned unchanged."""
    if "no such key:" in message and not message.endswith(NO_SUCH_KEY_HINT):
        return message + NO_SUCH_KEY_HINT
    return message


def _compile(expression: str) -> CompiledSelector:
    try:
        checked = _env().compile(expression)
    except RuntimeError as err:
        text = re.sub(r"^[A-Z_]+: ", "", str(err)).removesuffix(" [INVALID_ARGUMENT]")
        raise CELError(f"compilation failed: {text}") from err
    out = checked.return_type()
    if out not in (_T.BOOL, _T.DYN):
        raise CELError(f"must evaluate to bool or the unknown type, not {out.name().lower()}")
    cost = estimated_max_cost(expression)
    if cost > MAX_COST:
        raise CELError(
            f"estimated cost {cost} exceeds the limit of {MAX_COST} "
            "(comprehensions nested too deeply)"
        )
    domains: dict[str, set[str]] = {"attributes": set(), "capacity": set()}
    for field_name, domain in _DOMAIN_INDEX.findall(expression):
        domains[field_name].add(domain)
    return CompiledSelector(expression, checked, {k: frozenset(s) for k, s in domains.items() if s})


class SelectorCache:
    """Compiled selectors by expression text, least recently used dropped first; compile
    errors are cached too (as upstream's cache keeps failed results)."""

    def __init__(self, size: int = COMPILE_CACHE_SIZE) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, CompiledSelector | CELError] = OrderedDict()

    def get(self, expression: str) -> CompiledSelector:
        with self._lock:
            entry = self._entries.get(expression)
            if entry is not None:
                self._entries.move_to_end(expression)
        if entry is None:
            try:
                entry = _compile(expression)
            except CELError as err:
                entry = err
            with self._lock:
                self._entries[expression] = entry
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        if isinstance(entry, CELError):
            raise entry
        return entry


@lru_cache(maxsize=65536)
def device_activation(driver: str, device: Device) -> Any:
    """The CEL activation binding `device`, built once per device object and shared by every
    selector (binding a dict per evaluation costs about as much as the evaluation)."""
    return _env().Activation(data={"device": device_input(driver, device)})


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


@lru_cache(maxsize=65536)
def device_input(driver: str, device: Device) -> dict[str, Any]:
    """The `device` variable for one device (built once per device object)."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in device.attributes.items():
        domain, ident = _split(name, driver)
        value: Any
        if attr.kind in (ATTR_INT, ATTR_BOOL, ATTR_STRING):
            value = attr.value
        elif attr.kind == ATTR_VERSION:
            try:
                value = v.semver_value(str(attr.value))
            except v.CELValueError as err:
                raise CELError(f"attribute {name}: parse semantic version: {err}") from err
        else:
            raise CELError(f"attribute {name}: unsupported attribute value")
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _split(name, driver)
        capacity.setdefault(domain, {})[ident] = v.quantity_value(cap.value)
    return {
        "driver": driver,
        "allowMultipleAllocations": bool(device.allow_multiple_allocations),
        "attributes": attributes,
        "capacity": capacity,
    }
