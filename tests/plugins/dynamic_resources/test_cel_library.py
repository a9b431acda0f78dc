"""The API server's CEL libraries in device selectors, against the results Kubernetes documents
("CEL in Kubernetes" list, regex and sets examples; k8s.io/apiserver pkg/cel/library lists and
regex tests) and cel-go's lists, optional and two-variable comprehension extensions."""

from __future__ import annotations

import re

import pytest

from scheduler.plugins.dynamic_resources.cel import CELError, estimated_max_cost
from tests.plugins.dynamic_resources.cel_kit import device
from tests.plugins.dynamic_resources.cel_kit import run as run_on

_DEVICE = device({"model": {"string": "a100-80gb"}, "numa": {"int": 1}})


def run(expression: str) -> bool:
    return run_on(expression, _DEVICE)


TRUE = [
    # Kubernetes lists library.
    "[1, 2, 3].isSorted()",
    "!([3, 1].isSorted())",
    '["a", "b", "b"].isSorted()',
    "[1, 2, 3].sum() == 6",
    "[1.5, 2.5].sum() == 4.0",
    "[].sum() == 0",
    "[1, 2, 3].min() == 1",
    "[1, 2, 3].max() == 3",
    '["b", "a"].min() == "a"',
    "[1, 2, 2, 3].indexOf(2) == 1",
    "[1, 2, 2, 3].lastIndexOf(2) == 2",
    '["a", "b", "b", "c"].indexOf("b") == 1',
    "[1, 2].indexOf(5) == -1",
    '"abc".indexOf("c") == 2',  # the strings extension's overload still holds
    # Kubernetes regex library.
    '"abc 123".find("[0-9]+") == "123"',
    '"abc".find("[0-9]+") == ""',
    '"123 abc 456".findAll("[0-9]+") == ["123", "456"]',
    '"123 abc 456".findAll("[0-9]+", 1) == ["123"]',
    '"123 abc 456".findAll("[0-9]+", 0) == []',
    '"baaac".findAll("a*") == ["", "aaa", ""]',  # Go skips an empty match after a match
    'device.attributes["dra.example.com"].model.find("[0-9]+gb") == "80gb"',
    # Sets (cel-go ext.Sets, cel-cpp's sets extension).
    "sets.contains([1, 2, 3, 4], [2, 3])",
    "sets.equivalent([1, 2, 3], [3, 2, 1])",
    "sets.intersects([1, 2], [2, 3])",
    "!sets.intersects([1], [2])",
    # cel-go lists extension (version 2).
    "[3, 1, 2].sort() == [1, 2, 3]",
    "[1, [2, 3]].flatten() == [1, 2, 3]",
    "lists.range(3) == [0, 1, 2]",
    "[1, 2, 3].slice(1, 2) == [2]",
    "[1, 1, 2].distinct() == [1, 2]",
    "[1, 2].reverse() == [2, 1]",
    "[2, 1].sortBy(e, e) == [1, 2]",
    # Strings extension (version 2).
    '"%d-%s".format([1, "x"]) == "1-x"',
    '["a", "b"].join("-") == "a-b"',
    'strings.quote("a") == "\\"a\\""',
    # Optional types and two-variable comprehensions.
    'device.attributes["dra.example.com"].?missing.orValue("x") == "x"',
    'device.attributes["dra.example.com"].all(k, v, k != "")',
    "[10, 20].exists(i, v, i == 1 && v == 20)",
    "[1, 2].transformList(i, v, v * 2) == [2, 4]",
]


@pytest.mark.parametrize("expression", TRUE)
def test_library_functions(expression: str) -> None:
    assert run(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("[].min() == 0", "min(list) argument must not be empty"),
        ("[].max() == 0", "max(list) argument must not be empty"),
        ('"a".find("[a") == ""', "Illegal regex: error parsing regexp: "),
        ('"a".findAll("(") == []', "Illegal regex: error parsing regexp: "),
        ('["a"].sum() == 0', "no such overload"),
        ("[9223372036854775807, 1].sum() == 0", "integer overflow"),
    ],
)
def test_runtime_errors(expression: str, message: str) -> None:
    with pytest.raises(CELError, match=re.escape(message)):
        run(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "math.greatest(1, 2) == 2",  # cel-go's math extension is not in Kubernetes' environment
        '"abc".reverse() == "cba"',  # strings version 3
        '"abc".find(1) == ""',
        "[1].indexOf(1, 2) == 0",
    ],
)
def test_not_in_the_environment(expression: str) -> None:
    with pytest.raises(CELError, match="compilation failed"):
        run(expression)


def test_two_variable_macros_count_as_comprehensions() -> None:
    nested = "[1].all(a, [1].all(b, [1].transformList(i, c, [1].exists(j, d, true))))"
    assert estimated_max_cost(nested) > 1_000_000


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.attributes["dra.example.com"].numa.includes(1)', True),
        ('device.attributes["dra.example.com"].numa.includes(2)', False),
        ('device.attributes["dra.example.com"].model.includes("a100-80gb")', True),
        ("[1, 2].includes(2)", True),
        ('[1, 2].includes("2")', False),
    ],
)
def test_includes_as_the_stored_expressions_environment_declares_it(
    expression: str, expected: bool
) -> None:
    assert run(expression) is expected


def test_includes_refuses_long_lists() -> None:
    with pytest.raises(CELError, match="cannot be applied to lists longer than 48 values"):
        run("lists.range(49).includes(1)")


def test_allow_multiple_allocations_compiles_whatever_the_gates() -> None:
    """Upstream's scheduler compiles in the StoredExpressions environment, which declares the
    field whether DRAConsumableCapacity is on or off; a device without it reads false."""
    assert not run("device.allowMultipleAllocations")
