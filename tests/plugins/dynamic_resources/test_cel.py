"""CEL selectors and Kubernetes' extension functions, against upstream's documented results
(k8s.io/apiserver pkg/cel/library quantity and semver tests, k8s.io/dynamic-resource-allocation
cel compile tests)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.plugins.dynamic_resources.cel import (
    NO_SUCH_KEY_HINT,
    CELError,
    SelectorCache,
    enhance_runtime_error,
    estimated_max_cost,
)
from tests.plugins.dynamic_resources.cel_kit import DRIVER, device, run

QUANTITY_TRUE = [
    'quantity("200M") == quantity("200M")',
    'quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")',
    'quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M")',
    'quantity("50M").isLessThan(quantity("50Mi"))',
    'quantity("50Mi").isGreaterThan(quantity("50M"))',
    'quantity("150Mi").isGreaterThan(quantity("100Mi"))',
    'quantity("200M").compareTo(quantity("0.2G")) == 0',
    'quantity("50M").compareTo(quantity("50Mi")) == -1',
    'quantity("50Mi").compareTo(quantity("50M")) == 1',
    'quantity("50k").add(quantity("20")) == quantity("50.02k")',
    'quantity("50k").sub(quantity("20")) == quantity("49.98k")',
    'quantity("50k").sub(20) == quantity("49980")',
    'quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980',
    'quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20',
    'quantity("50k").asInteger() == 50000',
    'quantity("50").isInteger()',
    'quantity("50.703k").asApproximateFloat() == 50703.0',
    'isQuantity("20") && isQuantity("20M") && isQuantity("20Mi")',
    '[quantity("9999999999999999999999999999999999999")].all(x, '
    'x.add(quantity("1")).compareTo(x.add(quantity("2"))) == -1)',
    'sign(quantity("-3")) == -1 && sign(quantity("0")) == 0 && sign(quantity("1m")) == 1',
]
QUANTITY_FALSE = [
    'quantity("200M") == quantity("0.3G")',
    'quantity("100M").isLessThan(quantity("50M"))',
    'quantity("50M").isGreaterThan(quantity("100M"))',
    'quantity("50k").add(20).isLessThan(quantity("50020"))',
    'quantity("9999999999999999999999999999999999999G").isInteger()',
    'isQuantity("20Mo")',
    'isQuantity("10Mm")',
]


@pytest.mark.parametrize("expression", QUANTITY_TRUE)
def test_quantity_true(expression: str) -> None:
    assert run(expression) is True


@pytest.mark.parametrize("expression", QUANTITY_FALSE)
def test_quantity_false(expression: str) -> None:
    assert run(expression) is False


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('quantity("10Mo") == quantity("1")', "quantities must match the regular expression"),
        ('quantity("10Mm") == quantity("1")', "unable to parse quantity's suffix"),
        (
            'quantity("9999999999999999999999999999999999999G").asInteger() == 1',
            "cannot convert value to integer",
        ),
        ('semver("v1.0") == semver("1.0.0")', "No Major.Minor.Patch elements found"),
    ],
)
def test_runtime_errors(expression: str, message: str) -> None:
    with pytest.raises(CELError, match=message):
        run(expression)


SEMVER_TRUE = [
    'isSemver("1.2.3-beta.1+build.1")',
    'isSemver("v1.0.0", true) && isSemver("01.01.01", true) && isSemver("1", true)',
    'isSemver("1.1", true)',
    'semver("v01.01", true) == semver("1.1.0")',
    'semver("1.2.3") == semver("1.2.3")',
    'semver("1.0.0").isLessThan(semver("1.2.3"))',
    'semver("1.2.3").isGreaterThan(semver("1.0.0"))',
    'semver("1.2.3").compareTo(semver("1.2.3")) == 0',
    'semver("1.0.0").compareTo(semver("1.2.3")) == -1',
    'semver("1.2.3").compareTo(semver("1.0.0")) == 1',
    'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
    'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))',
    'semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))',
    'semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))',
    'semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))',
    'semver("1.0.0+a") == semver("1.0.0+b")',
]
SEMVER_FALSE = [
    'isSemver("")',
    'isSemver("v1.0.0")',
    'isSemver(" 1.0.0")',
    'isSemver("1. 0.0")',
    'isSemver("1.0.0 ")',
    'isSemver("01.01.01")',
    'isSemver("1")',
    'isSemver("1.1")',
    'isSemver("", true)',
    'isSemver(" 1.0.0", true)',
    'isSemver("1. 0.0", true)',
    'isSemver("1.0.0 ", true)',
    'semver("1.2.3") == semver("1.0.0")',
    'semver("1.0.0").isLessThan(semver("1.0.0"))',
    'semver("1.0.0").isGreaterThan(semver("1.0.0"))',
]


@pytest.mark.parametrize("expression", SEMVER_TRUE)
def test_semver_true(expression: str) -> None:
    assert run(expression) is True


@pytest.mark.parametrize("expression", SEMVER_FALSE)
def test_semver_false(expression: str) -> None:
    assert run(expression) is False


def test_overload_mismatch_is_a_compile_error() -> None:
    with pytest.raises(CELError, match="found no matching overload for 'isQuantity'"):
        run("isQuantity([1, 2, 3])")
    with pytest.raises(CELError, match="found no matching overload for 'isSemver'"):
        run("isSemver([1, 2, 3])")


# cel/compile_test.go of k8s.io/dynamic-resource-allocation (the cases of the v1.37 default
# environment: list-type attributes and `includes` are behind a gate that is off).
NAME_STRING = {"name": {"string": "fish"}}


@pytest.mark.parametrize(
    ("expression", "attributes", "driver", "expected"),
    [
        ("true", {}, DRIVER, True),
        ("false", {}, DRIVER, False),
        ('"no-such-domain" in device.attributes', {}, DRIVER, False),
        ('"dra.example.com" in device.attributes', NAME_STRING, DRIVER, True),
        ('device.driver == ""', {}, "", True),
        ('device.driver == "dra.example.com"', {}, DRIVER, True),
        ('device.attributes["dra.example.com"].name == "fish"', NAME_STRING, DRIVER, True),
        ('device.attributes["dra.example.com"]["name"] == "fish"', NAME_STRING, DRIVER, True),
        (
            'cel.bind(dra, device.attributes["dra.example.com"], dra.name == "fish")',
            NAME_STRING,
            DRIVER,
            True,
        ),
        (
            'device.attributes["other.example.com"].name == "fish"',
            {"other.example.com/name": {"string": "fish"}},
            DRIVER,
            True,
        ),
        ('device.attributes["dra.example.com"].name', {"name": {"bool": True}}, DRIVER, True),
        ('device.attributes["dra.example.com"].name > 0', {"name": {"int": 1}}, DRIVER, True),
        (
            'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
            {"name": {"version": "1.0.0"}},
            DRIVER,
            True,
        ),
        (
            'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true))'
            ' && isSemver("v1.0.0", true)',
            {"name": {"version": "1.0.0"}},
            DRIVER,
            True,
        ),
    ],
)
def test_upstream_selector_examples(
    expression: str, attributes: dict[str, Any], driver: str, expected: bool
) -> None:
    assert run(expression, device(attributes), driver) is expected


def test_missing_domain_is_an_empty_map() -> None:
    for expression in (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
    ):
        with pytest.raises(CELError, match="no such key: noSuchAttr"):
            run(expression)
    assert run('size(device.attributes["no-such-domain"]) == 0') is True
    assert run('"x" in device.capacity["no-such-domain"]') is False


def test_no_such_key_gets_upstreams_hint_once() -> None:
    hinted = enhance_runtime_error("no such key: exists")
    assert hinted == "no such key: exists" + NO_SUCH_KEY_HINT
    assert enhance_runtime_error(hinted) == hinted
    assert enhance_runtime_error("division by zero") == "division by zero"


def test_docs_examples_capacity_and_multi_allocation() -> None:
    gpu = device(
        {"model": {"string": "a100"}, "dra.example.com/ver": {"version": "1.2.3"}},
        {"memory": {"value": "80Gi"}},
        multi=True,
    )
    assert run('device.attributes["dra.example.com"].model == "a100"', gpu)
    assert run('device.capacity["dra.example.com"].memory.compareTo(quantity("40Gi")) >= 0', gpu)
    assert not run('device.capacity["dra.example.com"].memory.isLessThan(quantity("40Gi"))', gpu)
    assert run('"model" in device.attributes["dra.example.com"]', gpu)
    assert run("device.allowMultipleAllocations", gpu)
    assert not run("device.allowMultipleAllocations")


def test_compile_errors() -> None:
    with pytest.raises(CELError, match="Syntax error"):
        run("?!")
    with pytest.raises(CELError, match="must evaluate to bool or the unknown type, not int"):
        run("1")
    with pytest.raises(CELError, match="undeclared reference to 'nosuch'"):
        run("nosuch(1)")


def test_non_bool_result_at_run_time() -> None:
    with pytest.raises(CELError, match="CEL result of type string could not be converted to bool"):
        run('device.attributes["dra.example.com"].name', device(NAME_STRING))


def test_bad_version_attribute_names_the_attribute() -> None:
    with pytest.raises(CELError, match="attribute v: parse semantic version"):
        run("true", device({"v": {"version": "1.0"}}))


def test_cost_limit() -> None:
    nested = "[1].all(a, [1].all(b, [1].all(c, [1].all(d, true))))"
    assert estimated_max_cost("[1].all(a, a > 0)") < 1_000_000
    assert estimated_max_cost(nested) > 1_000_000
    with pytest.raises(CELError, match="exceeds the limit of 1000000"):
        run(nested)


def test_cache_keeps_compile_errors_and_evicts_least_recent() -> None:
    cache = SelectorCache(size=2)
    first = cache.get("true")
    assert cache.get("true") is first
    cache.get("false")
    cache.get("1 == 1")  # evicts "true"
    assert cache.get("true") is not first
    for _ in range(2):
        with pytest.raises(CELError, match="Syntax error"):
            cache.get("?!")
