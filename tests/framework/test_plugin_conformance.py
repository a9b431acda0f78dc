"""Every in-tree plugin is what its SPEC claims: Python's form of Go's compile-time
`var _ framework.FilterPlugin = &X{}`.

A `PluginSpec` names the extension-point Protocols its plugin implements (`implements`). The
plugin built with default args must satisfy each (runtime_checkable isinstance), each Protocol
method must have the Protocol's parameters (names, kinds, count), and the plugin must claim every
extension point the runtime would find in it: the runtime goes by the methods a plugin has, so
a method the spec does not claim, or a claimed one with the wrong parameters, fails here first.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any, Protocol

import pytest

import scheduler.framework as api
from scheduler.framework import PluginSpec
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import build_plugin

#: The Protocols a plugin can implement: every exported Protocol that extends Plugin.
EXTENSION_PROTOCOLS: tuple[type, ...] = tuple(
    value
    for name in api.__all__
    if isinstance(value := getattr(api, name), type)
    and value is not api.Plugin
    and api.Plugin in value.__mro__
)

#: Objects a plugin hands out from an extension point, and the Protocol they must satisfy.
RETURNED_EXTENSIONS: tuple[tuple[type, str, type], ...] = (
    (api.PreFilterPlugin, "pre_filter_extensions", api.PreFilterExtensions),
    (api.ScorePlugin, "score_extensions", api.ScoreExtensions),
)


def protocol_methods(protocol: type) -> dict[str, Any]:
    """The methods a Protocol declares, its Protocol bases' included (`name` is data)."""
    methods: dict[str, Any] = {}
    for cls in reversed(protocol.__mro__):
        if cls in (object, Protocol) or not getattr(cls, "_is_protocol", False):
            continue
        for name, value in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(value):
                methods[name] = value
    return methods


def _parameters(signature: inspect.Signature) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in signature.parameters.values()]


def signature_errors(obj: object, protocol: type) -> list[str]:
    """Where `obj` is not `protocol`: a missing member or a method whose parameters differ."""
    if not isinstance(obj, protocol):
        return [f"is not a {protocol.__name__}"]
    errors = []
    for name, declared in protocol_methods(protocol).items():
        expected = _parameters(inspect.signature(declared))[1:]  # without self
        actual = _parameters(inspect.signature(getattr(obj, name)))
        if actual != expected:
            errors.append(
                f"{protocol.__name__}.{name} takes {[n for n, _ in expected]},"
                f" the plugin's {[n for n, _ in actual]}"
            )
    return errors


def claimed_with_bases(claimed: tuple[type, ...]) -> set[type]:
    """The claimed Protocols and the extension Protocols they extend (BatchFilterPlugin is
    a FilterPlugin)."""
    return {base for p in claimed for base in p.__mro__ if base in EXTENSION_PROTOCOLS}


def conformance_errors(spec: PluginSpec, plugin: object) -> list[str]:
    """Everything in which `plugin` is not what `spec` claims."""
    errors = [
        f"claims {p!r}, not a plugin Protocol"
        for p in spec.implements
        if p not in EXTENSION_PROTOCOLS
    ]
    if not spec.implements:
        errors.append("claims no extension point")
    claimed = claimed_with_bases(spec.implements)
    for protocol in EXTENSION_PROTOCOLS:
        if protocol in claimed:
            errors += signature_errors(plugin, protocol)
        elif isinstance(plugin, protocol):
            errors.append(f"is a {protocol.__name__} its spec does not claim")
    for point, method, returned_protocol in RETURNED_EXTENSIONS:
        if point in claimed and isinstance(plugin, point):
            returned = getattr(plugin, method)()
            if returned is not None:
                errors += [
                    f"{method}(): {e}" for e in signature_errors(returned, returned_protocol)
                ]
    return errors


REGISTRY = in_tree_registry()


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_in_tree_plugin_is_what_its_spec_claims(name: str) -> None:
    spec = REGISTRY[name]
    assert conformance_errors(spec, build_plugin(spec)) == []


def test_the_example_plugin_is_what_its_spec_claims(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "examples" / "node-pool"))
    example = importlib.import_module("pysched_node_pool")
    args = {"labelKey": "example.com/pool", "preferredPools": ["reserved"]}
    assert conformance_errors(example.SPEC, build_plugin(example.SPEC, args)) == []


class _Filter:
    name = "Broken"

    def filter(self, state: Any, pod: Any, node: Any) -> None:  # `node_info` in the Protocol
        return None


def _sign_pod(pod: Any) -> tuple[None, None]:
    return None, None


def _claiming(plugin: object, *protocols: type) -> PluginSpec:
    return PluginSpec(lambda _args, _handle: plugin, implements=protocols)


def test_the_check_finds_a_wrong_parameter_an_unclaimed_point_and_a_missing_method() -> None:
    plugin = _Filter()
    assert conformance_errors(_claiming(plugin, api.FilterPlugin), plugin) == [
        "FilterPlugin.filter takes ['state', 'pod', 'node_info'],"
        " the plugin's ['state', 'pod', 'node']"
    ]
    plugin.sign_pod = _sign_pod  # type: ignore[attr-defined]
    errors = conformance_errors(_claiming(plugin, api.ScorePlugin, api.SignPlugin), plugin)
    assert "is a FilterPlugin its spec does not claim" in errors
    assert "is not a ScorePlugin" in errors
    assert conformance_errors(_claiming(plugin), plugin)[0] == "claims no extension point"
