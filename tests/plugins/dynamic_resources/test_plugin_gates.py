"""DynamicResources under kube-scheduler v1.37's DRA feature gates: their defaults, the
refusals at start (unknown, locked, dependencies, what kube-pysched cannot honour), and each
honoured gate switched off in the plugin, with the kit; filterTimeout on an injected clock."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from scheduler.features import FeatureGateError, FeatureGates
from scheduler.framework import ArgsError, parse_device_taint_rule, parse_resource_slice
from scheduler.framework.dra import StaticDRA
from scheduler.framework.status import Code
from scheduler.plugins.dynamic_resources.allocator import Features
from scheduler.testing import FakeHandle, make_node, make_snapshot, run_plugin
from tests.plugins.dynamic_resources.builders import device, slice_
from tests.plugins.dynamic_resources.plugin_kit import (
    DRIVER,
    claim,
    gpu_class,
    gpu_slice,
    handle,
    plugin,
    pod,
)

#: Consumable capacity and binding conditions off: upstream's "stable" allocator variant.
STABLE = (
    "DRAConsumableCapacity=false,DRAFractionalCapacityRange=false,DRADeviceBindingConditions=false"
)


def gated(h: FakeHandle, gates: str, args: dict[str, Any] | None = None) -> Any:
    h.features = FeatureGates.parse(gates)
    return plugin(h, args)


# --- the gates themselves ------------------------------------------------------------------


def test_v137_defaults() -> None:
    gates = FeatureGates()
    on = [
        "DRAAdminAccess",
        "DRAConsumableCapacity",
        "DRADeviceBindingConditions",
        "DRADeviceTaintRules",
        "DRADeviceTaints",
        "DRAExtendedResource",
        "DRAFractionalCapacityRange",
        "DRAPartitionableDevices",
        "DRAPrioritizedList",
        "DRAResourceClaimDeviceStatus",
        "DRASchedulerFilterTimeout",
        "DynamicResourceAllocation",
    ]
    off = ["DRAListTypeAttributes", "DRAWorkloadResourceClaims", "DRADerivedAttributes"]
    assert all(gates.enabled(name) for name in on)
    assert not any(gates.enabled(name) for name in off)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "DRAAdminAccess=false",
            "cannot set feature gate DRAAdminAccess to false, feature is locked to true",
        ),
        (
            "DRAPrioritizedList=false",
            "cannot set feature gate DRAPrioritizedList to false, feature is locked to true",
        ),
        (
            "DRAConsumableCapacity=false",
            "DRAFractionalCapacityRange is enabled, but depends on "
            "features that are disabled: [DRAConsumableCapacity]",
        ),
        (
            "DRADeviceTaints=false",
            "DRADeviceTaintRules is enabled, but depends on features "
            "that are disabled: [DRADeviceTaints]",
        ),
        (
            "DRAListTypeAttributes=true",
            "feature gate DRAListTypeAttributes=true is not "
            "supported by kube-pysched (list-type attributes and includes() in CEL are not "
            "implemented)",
        ),
        (
            "DRAWorkloadResourceClaims=true",
            "feature gate DRAWorkloadResourceClaims=true is not "
            "supported by kube-pysched (PodGroup resource claims are not implemented)",
        ),
        (
            "DRAFractionalCapacityRange=false",
            "feature gate DRAFractionalCapacityRange=false is "
            "not supported by kube-pysched (integer-only capacity ranges are not implemented)",
        ),
        ("DRANoSuchGate=true", "unrecognized feature gate: DRANoSuchGate (known: "),
    ],
)
def test_refused_at_start_with_one_line(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as err:
        FeatureGates.parse(text)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_the_plugin_passes_the_gates_to_the_allocator() -> None:
    assert gated(handle(), "").features == Features()
    p = gated(handle(), STABLE + ",DRADeviceTaints=false,DRADeviceTaintRules=false")
    assert p.features == Features(
        device_taints=False, consumable_capacity=False, binding_conditions=False
    )
    assert p.features.stable


# --- each honoured gate switched off ---------------------------------------------------------


def test_stable_variant_searches_pools_in_the_order_they_first_appear() -> None:
    slices = (
        parse_resource_slice(slice_("n1-b", "n1", "pool-b", DRIVER, device("gpu-b"))),
        parse_resource_slice(slice_("n1-a", "n1", "pool-a", DRIVER, device("gpu-a"))),
    )
    for gates, expected in (("", "gpu-a"), (STABLE, "gpu-b")):
        h = handle(("n1",), claims=(claim("c1"),), slices=slices)
        p = gated(h, gates)
        r = run_plugin(p, pod("p", claims={"gpu": "c1"}), h.snap)
        assert r.feasible == ["n1"]
        (allocation,) = r.state.read("DynamicResources").allocations("n1")
        assert allocation["devices"]["results"][0]["device"] == expected


TAINTED = device("gpu-0", taints=[{"key": "broken", "effect": "NoSchedule"}])


@pytest.mark.parametrize(
    ("gates", "feasible"),
    [("", []), ("DRADeviceTaints=false,DRADeviceTaintRules=false", ["n1"])],
)
def test_device_taints(gates: str, feasible: list[str]) -> None:
    slices = (parse_resource_slice(slice_("n1-gpus", "n1", "n1", DRIVER, TAINTED)),)
    h = handle(("n1",), claims=(claim("c1"),), slices=slices)
    r = run_plugin(gated(h, gates), pod("p", claims={"gpu": "c1"}), h.snap)
    assert r.feasible == feasible


@pytest.mark.parametrize(("gates", "feasible"), [("", []), ("DRADeviceTaintRules=false", ["n1"])])
def test_device_taint_rules(gates: str, feasible: list[str]) -> None:
    rule = parse_device_taint_rule(
        {
            "metadata": {"name": "maintenance"},
            "spec": {
                "deviceSelector": {"driver": DRIVER, "pool": "n1", "device": "gpu-0"},
                "taint": {"key": "maintenance", "effect": "NoSchedule"},
            },
        }
    )
    source = StaticDRA((claim("c1"),), (gpu_slice("n1", "gpu-0"),), (gpu_class(),), (rule,))
    h = FakeHandle(snap=make_snapshot([make_node("n1")]), static_dra=source)
    r = run_plugin(gated(h, gates), pod("p", claims={"gpu": "c1"}), h.snap)
    assert r.feasible == feasible


def test_binding_conditions_off_block_nothing_and_wait_for_nothing() -> None:
    failed = claim(
        "c1",
        allocation={
            "devices": {
                "results": [
                    {
                        "request": "gpu",
                        "driver": DRIVER,
                        "pool": "n1",
                        "device": "gpu-0",
                        "bindingConditions": ["ready"],
                        "bindingFailureConditions": ["failed"],
                    }
                ]
            }
        },
    )
    failed = dataclasses.replace(
        failed,
        devices=(
            {
                "driver": DRIVER,
                "pool": "n1",
                "device": "gpu-0",
                "conditions": [{"type": "failed", "status": "True", "reason": "r"}],
            },
        ),
    )
    on, off = gated(handle(), ""), gated(handle(), STABLE)
    assert on.binder.binding_conditions and not off.binder.binding_conditions
    assert on.binder.blocked(failed)
    assert not off.binder.blocked(failed)


# --- filterTimeout ----------------------------------------------------------------------------


def _search_heavy() -> FakeHandle:
    """Five GPUs asked of a node with four: the search tries every combination first."""
    return handle(
        ("n1",),
        claims=(claim("c1", count=5),),
        slices=(gpu_slice("n1", *(f"gpu-{i}" for i in range(4))),),
    )


def _ticking(p: Any) -> None:
    """Each reading of the clock is one second later: the deadline passes after 10 steps."""
    ticks = itertools.count()
    p.clock = lambda: float(next(ticks))


def test_filter_timeout_fires_during_the_search() -> None:
    h = _search_heavy()
    p = gated(h, "")
    _ticking(p)
    r = run_plugin(p, pod("p", claims={"gpu": "c1"}), h.snap)
    status = r.filter_statuses["n1"]
    assert status.code == Code.ERROR
    assert status.message() == "node n1: timed out trying to allocate devices"


def test_filter_timeout_zero_or_gate_off_is_unbounded() -> None:
    for gates, args in (("", {"filterTimeout": "0s"}), ("DRASchedulerFilterTimeout=false", None)):
        h = _search_heavy()
        p = gated(h, gates, args)
        _ticking(p)
        r = run_plugin(p, pod("p", claims={"gpu": "c1"}), h.snap)
        assert r.rejections() == {"n1": "cannot allocate all claims"}


def test_timeouts_may_not_be_set_while_their_gate_is_off() -> None:
    with pytest.raises(ArgsError, match="filterTimeout: Forbidden: DRASchedulingFilterTimeout"):
        gated(handle(), "DRASchedulerFilterTimeout=false", {"filterTimeout": "5s"})
    with pytest.raises(ArgsError, match="bindingTimeout: Forbidden: DRADeviceBindingConditions"):
        gated(handle(), STABLE, {"bindingTimeout": "5m"})
