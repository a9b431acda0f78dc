"""PodTopologySpreadArgs: defaults and kube-scheduler's validation messages."""

from __future__ import annotations

import pytest

from scheduler.framework.registry import ArgsError
from scheduler.plugins.pod_topology_spread.args import SYSTEM_DEFAULT_CONSTRAINTS, decode_args


def test_defaults_to_system_constraints() -> None:
    args = decode_args(None)
    assert args.system_defaulted
    assert [
        (c.topology_key, c.max_skew, c.when_unsatisfiable) for c in args.default_constraints
    ] == [
        ("kubernetes.io/hostname", 3, "ScheduleAnyway"),
        ("topology.kubernetes.io/zone", 5, "ScheduleAnyway"),
    ]
    assert (
        decode_args({"defaultingType": "System"}).default_constraints == SYSTEM_DEFAULT_CONSTRAINTS
    )


def test_list_with_constraints_and_list_without() -> None:
    args = decode_args(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ],
        }
    )
    assert not args.system_defaulted
    assert args.default_constraints[0].max_skew == 2
    assert decode_args({"defaultingType": "List"}).default_constraints == ()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"defaultingType": "Other"},
            'defaultingType: Unsupported value: "Other": supported values: "System", "List"',
        ),
        (
            {
                "defaultingType": "System",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}],
            },
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone"}],
            },
            "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Never"}
                ],
            },
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Never": supported '
            'values: "DoNotSchedule", "ScheduleAnyway"',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {},
                    }
                ],
            },
            "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a "
            "selector, as they deduced for each pod",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                ],
            },
            'defaultConstraints[1]: Duplicate value: "{zone, DoNotSchedule}"',
        ),
        ({"unknown": 1}, 'unknown: unknown field "unknown"'),
    ],
)
def test_validation_errors(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ArgsError) as err:
        decode_args(raw)
    assert str(err.value) == message


def test_several_errors_are_reported_together() -> None:
    with pytest.raises(ArgsError) as err:
        decode_args(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": -1, "topologyKey": "bad key!", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            }
        )
    text = str(err.value)
    assert text.startswith("[defaultConstraints[0].maxSkew: Invalid value: -1")
    assert 'defaultConstraints[0].topologyKey: Invalid value: "bad key!"' in text
