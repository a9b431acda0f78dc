"""Parsing of the DRA objects (scheduler/api/dra.py, dra_slices.py, dra_common.py)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scheduler.api.dra import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceToleration,
    parse_device_class,
    parse_device_taint_rule,
    parse_resource_claim,
    parse_resource_claim_template,
)
from scheduler.api.dra_common import DeviceTaint, DRAParseError, format_quantity
from scheduler.api.dra_slices import (
    ATTR_BOOL,
    ATTR_INT,
    ATTR_STRING,
    ATTR_VERSION,
    apply_taint_rules,
    parse_resource_slice,
)


def test_claim_requests_subrequests_constraints_and_config() -> None:
    claim = parse_resource_claim(
        {
            "metadata": {"namespace": "ns", "name": "c", "uid": "u1"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.example.com",
                                "selectors": [{"cel": {"expression": "true"}}],
                                "adminAccess": True,
                                "tolerations": [{"key": "k", "operator": "Exists"}],
                                "capacity": {"requests": {"memory": "1Gi"}},
                            },
                        },
                        {
                            "name": "any",
                            "firstAvailable": [
                                {"name": "big", "deviceClassName": "c", "count": 2},
                                {"name": "all", "deviceClassName": "c", "allocationMode": "All"},
                            ],
                        },
                    ],
                    "constraints": [{"requests": ["gpu"], "matchAttribute": "x.com/numa"}],
                    "config": [{"requests": ["gpu"], "opaque": {"driver": "d", "parameters": {}}}],
                }
            },
            "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "pu"}]},
        }
    )
    assert claim.key == "ns/c"
    gpu, anyreq = claim.requests
    assert gpu.exactly is not None
    assert gpu.exactly.allocation_mode == ALLOCATION_MODE_EXACT_COUNT
    assert gpu.exactly.count == 1
    assert gpu.exactly.admin_access is True
    assert gpu.exactly.selectors == ("true",)
    assert gpu.exactly.capacity_requests == {"memory": Fraction(2**30)}
    assert gpu.exactly.tolerations == (DeviceToleration("k", "Exists", "", "", None),)
    assert anyreq.exactly is None
    assert [s.name for s in anyreq.first_available] == ["big", "all"]
    assert anyreq.first_available[0].count == 2
    assert anyreq.first_available[1].allocation_mode == ALLOCATION_MODE_ALL
    assert anyreq.first_available[0].admin_access is None
    assert claim.constraints[0].match_attribute == "x.com/numa"
    assert claim.config[0].requests == ("gpu",)
    assert claim.config[0].configuration == {"opaque": {"driver": "d", "parameters": {}}}
    assert claim.allocation is None
    assert len(claim.reserved_for) == 1


def test_bad_capacity_request_names_claim_and_field() -> None:
    with pytest.raises(DRAParseError, match=r"ResourceClaim ns/c: spec.*capacity.requests\[m\]"):
        parse_resource_claim(
            {
                "metadata": {"namespace": "ns", "name": "c"},
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "r",
                                "exactly": {
                                    "deviceClassName": "c",
                                    "capacity": {"requests": {"m": "lots"}},
                                },
                            }
                        ]
                    }
                },
            }
        )


def test_class_selectors_config_and_extended_resource() -> None:
    cls = parse_device_class(
        {
            "metadata": {"name": "gpu"},
            "spec": {
                "selectors": [{"cel": {"expression": 'device.driver == "d"'}}, {}],
                "config": [{"opaque": {"driver": "d"}}],
                "extendedResourceName": "example.com/gpu",
            },
        }
    )
    assert cls.selectors == ('device.driver == "d"', None)
    assert cls.config[0].requests == ()
    assert cls.extended_resource_name == "example.com/gpu"


def test_template_spec_is_checked() -> None:
    tpl = parse_resource_claim_template(
        {"metadata": {"namespace": "n", "name": "t"}, "spec": {"spec": {"devices": {}}}}
    )
    assert tpl.claim_spec == {"devices": {}}
    with pytest.raises(DRAParseError, match="ResourceClaimTemplate n/t"):
        parse_resource_claim_template(
            {
                "metadata": {"namespace": "n", "name": "t"},
                "spec": {"spec": {"devices": {"requests": "x"}}},
            }
        )


SLICE = {
    "metadata": {"name": "s1"},
    "spec": {
        "driver": "gpu.example.com",
        "pool": {"name": "pool", "generation": 2, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}],
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {
                    "model": {"string": "a100"},
                    "numa": {"int": 1},
                    "mig": {"bool": False},
                    "driverVersion": {"version": "1.2.3"},
                },
                "capacity": {
                    "memory": {
                        "value": "80Gi",
                        "requestPolicy": {
                            "default": "1Gi",
                            "validRange": {"min": "1Gi", "step": "1Gi"},
                        },
                    }
                },
                "consumesCounters": [
                    {"counterSet": "gpu-0", "counters": {"memory": {"value": "10Gi"}}}
                ],
                "taints": [{"key": "broken", "effect": "NoSchedule"}],
                "bindsToNode": True,
                "bindingConditions": ["ready"],
                "bindingFailureConditions": ["failed"],
                "allowMultipleAllocations": True,
            }
        ],
    },
}


def test_slice_fields() -> None:
    s = parse_resource_slice(SLICE)
    assert (s.driver, s.pool, s.generation, s.resource_slice_count) == (
        "gpu.example.com",
        "pool",
        2,
        1,
    )
    assert s.target.node_name == "node-1"
    assert s.target.matches("node-1", {})
    assert not s.target.matches("node-2", {})
    assert s.shared_counters[0].counters == {"memory": Fraction(80 * 2**30)}
    d = s.devices[0]
    assert {k: a.kind for k, a in d.attributes.items()} == {
        "model": ATTR_STRING,
        "numa": ATTR_INT,
        "mig": ATTR_BOOL,
        "driverVersion": ATTR_VERSION,
    }
    cap = d.capacity["memory"]
    assert cap.request_policy is not None
    assert cap.request_policy.default == Fraction(2**30)
    assert cap.request_policy.valid_range == (Fraction(2**30), None, Fraction(2**30))
    assert d.consumes_counters[0].counters == {"memory": Fraction(10 * 2**30)}
    assert d.taints == (DeviceTaint("broken", "", "NoSchedule", None),)
    assert d.binds_to_node
    assert d.binding_conditions == ("ready",)
    assert d.binding_failure_conditions == ("failed",)
    assert d.allow_multiple_allocations is True


def test_slice_node_selector_with_two_terms_is_refused() -> None:
    bad = {
        "metadata": {"name": "s"},
        "spec": {
            "driver": "d",
            "pool": {"name": "p"},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": []}, {"matchFields": []}]},
        },
    }
    with pytest.raises(DRAParseError, match=r"ResourceSlice s: spec\.nodeSelector"):
        parse_resource_slice(bad)


def test_slice_selector_matches_labels() -> None:
    s = parse_resource_slice(
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": "d",
                "pool": {"name": "p", "resourceSliceCount": 1},
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]}
                    ]
                },
            },
        }
    )
    assert s.target.matches("n", {"z": "a"})
    assert not s.target.matches("n", {"z": "b"})


def test_taint_rules_apply_in_order_to_selected_devices() -> None:
    s = parse_resource_slice(SLICE)
    rule = parse_device_taint_rule(
        {
            "metadata": {"name": "r"},
            "spec": {
                "deviceSelector": {"driver": "gpu.example.com", "device": "gpu-0"},
                "taint": {"key": "maintenance", "value": "x", "effect": "NoExecute"},
            },
        }
    )
    other = parse_device_taint_rule(
        {
            "metadata": {"name": "o"},
            "spec": {"deviceSelector": {"pool": "other"}, "taint": {"key": "k", "effect": "None"}},
        }
    )
    tainted = apply_taint_rules(s, [rule, other])
    assert [t.key for t in tainted.devices[0].taints] == ["broken", "maintenance"]
    assert apply_taint_rules(s, [other]) is s
    with pytest.raises(DRAParseError, match=r"DeviceTaintRule r: spec\.deviceSelector"):
        parse_device_taint_rule(
            {"metadata": {"name": "r"}, "spec": {"deviceSelector": {"deviceClassName": "c"}}}
        )


def test_toleration_semantics() -> None:
    taint = DeviceTaint("k", "v", "NoSchedule", None)
    assert DeviceToleration("k", "Equal", "v", "", None).tolerates(taint)
    assert not DeviceToleration("k", "Equal", "w", "", None).tolerates(taint)
    assert DeviceToleration("", "Exists", "", "", None).tolerates(taint)
    assert not DeviceToleration("k", "Exists", "", "NoExecute", None).tolerates(taint)
    assert not DeviceToleration("k", "Bogus", "v", "", None).tolerates(taint)


@pytest.mark.parametrize(
    ("value", "binary", "text"),
    [
        (Fraction(2**30), True, "1Gi"),
        (Fraction(1536), True, "1536"),
        (Fraction(2000), False, "2k"),
        (Fraction(1, 10), False, "100m"),
        (Fraction(0), False, "0"),
        (Fraction(5), True, "5"),
    ],
)
def test_format_quantity(value: Fraction, binary: bool, text: str) -> None:
    assert format_quantity(value, binary) == text
