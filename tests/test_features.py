"""Feature gates: DynamicResources is on by default, kube-scheduler's DynamicResourceAllocation
is locked on as in v1.37, and kube-pysched's own switch can still turn the plugin off."""

from __future__ import annotations

import pytest

from scheduler.features import FeatureGateError, FeatureGates


def test_dynamic_resources_is_on_by_default() -> None:
    gates = FeatureGates()
    assert gates.enabled("PyschedDynamicResources")
    assert gates.enabled("DynamicResourceAllocation")


def test_the_locked_upstream_gate_accepts_its_default_and_refuses_the_other_value() -> None:
    assert FeatureGates.parse("DynamicResourceAllocation=true").enabled("DynamicResourceAllocation")
    with pytest.raises(FeatureGateError) as err:
        FeatureGates.parse("DynamicResourceAllocation=false")
    assert str(err.value) == (
        "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true"
    )


def test_kube_pyscheds_switch_turns_the_plugin_off() -> None:
    gates = FeatureGates.parse("PyschedDynamicResources=false")
    assert not gates.enabled("PyschedDynamicResources")
    assert gates.enabled("DynamicResourceAllocation")
