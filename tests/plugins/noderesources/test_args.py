"""Args decoding: kube-scheduler's v1 defaults, validation paths and messages, strict fields."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.registry import ArgsError
from scheduler.plugins.noderesources import balanced_allocation_args, fit_args
from scheduler.plugins.noderesources.resource_specs import ResourceSpec

CPU_MEM = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def test_fit_defaults() -> None:
    assert fit_args.decode_args(None) == fit_args.FitArgs()
    args = fit_args.decode_args({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "x"})
    assert (args.strategy, args.resources, args.shape) == ("LeastAllocated", CPU_MEM, ())
    most = fit_args.decode_args({"scoringStrategy": {"type": "MostAllocated", "resources": []}})
    assert (most.strategy, most.resources) == ("MostAllocated", CPU_MEM)
    weighted = fit_args.decode_args(
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 0}, {"name": "example.com/gpu"}],
            }
        }
    )
    assert weighted.resources == (ResourceSpec("cpu", 1), ResourceSpec("example.com/gpu", 1))


def test_fit_rtcr_shape_and_ignored() -> None:
    args = fit_args.decode_args(
        {
            "ignoredResources": ["example.com/foo"],
            "ignoredResourceGroups": ["example.com"],
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 100}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 10}, {"utilization": 100}]
                },
            },
        }
    )
    assert args.shape == ((0, 10), (100, 0))
    assert args.resources == (ResourceSpec("cpu", 100),)
    assert args.ignored_resources == {"example.com/foo"}
    assert args.ignored_resource_groups == {"example.com"}


RTCR = "scoringStrategy.requestedToCapacityRatio"
_KEY_REGEX = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"


def _rtcr(points: list[dict[str, int]]) -> dict[str, Any]:
    return {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": points},
        }
    }


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        (
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 101}],
                }
            },
            "scoringStrategy.resources[0].weight",
            "Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "memory", "weight": -1}],
                }
            },
            "scoringStrategy.resources[0].weight",
            "Invalid value: -1: resource weight of memory not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "Fancy"}},
            "scoringStrategy.type",
            'Unsupported value: "Fancy": supported values: "LeastAllocated", "MostAllocated", '
            '"RequestedToCapacityRatio"',
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu"}]}},
            "scoringStrategy.type",
            'Unsupported value: "": supported values: "LeastAllocated", "MostAllocated", '
            '"RequestedToCapacityRatio"',
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            RTCR,
            "Required value: must be specified when type is RequestedToCapacityRatio",
        ),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {}}},
            RTCR,
            "Forbidden: must be nil when type is not RequestedToCapacityRatio",
        ),
        (_rtcr([]), f"{RTCR}.shape", "Required value: at least one point must be specified"),
        (
            _rtcr([{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]),
            f"{RTCR}.shape[1].utilization",
            "Invalid value: 10: values must be sorted in increasing order",
        ),
        (
            _rtcr([{"utilization": 101, "score": 1}]),
            f"{RTCR}.shape[0].utilization",
            "Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            _rtcr([{"utilization": 1, "score": 11}]),
            f"{RTCR}.shape[0].score",
            "Invalid value: 11: not in valid range [0, 10]",
        ),
        (
            {"ignoredResources": ["-bad"]},
            "ignoredResources[0]",
            "Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
            f"'my.name',  or '123-abc', regex used for validation is '{_KEY_REGEX}')",
        ),
        (
            {"ignoredResourceGroups": ["a/b"]},
            "ignoredResourceGroups[0]",
            "Invalid value: \"a/b\": resource group name can't contain '/'",
        ),
        ({"scoringStrategie": {}}, "scoringStrategie", 'unknown field "scoringStrategie"'),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "w": 1}]}},
            "scoringStrategy.resources[0].w",
            'unknown field "w"',
        ),
        (
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": "1"}],
                }
            },
            "scoringStrategy.resources[0].weight",
            'Invalid value: "1": must be an integer',
        ),
    ],
)
def test_fit_args_errors(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ArgsError) as err:
        fit_args.decode_args(raw)
    assert (err.value.path, err.value.message) == (path, message)


def test_fit_args_several_errors_are_aggregated_in_order() -> None:
    with pytest.raises(ArgsError) as err:
        fit_args.decode_args(
            {
                "ignoredResourceGroups": ["x/y"],
                "scoringStrategy": {"type": "Nope", "resources": [{"name": "cpu", "weight": 200}]},
            }
        )
    assert err.value.path == ""
    assert err.value.message.startswith(
        "[ignoredResourceGroups[0]: Invalid value: \"x/y\": resource group name can't contain '/', "
    )
    assert 'scoringStrategy.type: Unsupported value: "Nope"' in err.value.message
    assert err.value.message.endswith(
        "scoringStrategy.resources[0].weight: Invalid value: 200: resource weight of cpu not in "
        "valid range (0, 100]]"
    )


def test_balanced_defaults() -> None:
    assert balanced_allocation_args.decode_args(None).resources == CPU_MEM
    assert balanced_allocation_args.decode_args({"resources": []}).resources == CPU_MEM
    args = balanced_allocation_args.decode_args(
        {"resources": [{"name": "cpu", "weight": 0}, {"name": "x/y"}]}
    )
    assert args.resources == (ResourceSpec("cpu", 1), ResourceSpec("x/y", 1))


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        (
            {"resources": [{"name": "cpu", "weight": 2}]},
            "resources[0].weight",
            "Invalid value: 2: must be 1",
        ),
        (
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            "resources[1].name",
            'Duplicate value: "cpu"',
        ),
        ({"resource": []}, "resource", 'unknown field "resource"'),
    ],
)
def test_balanced_args_errors(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ArgsError) as err:
        balanced_allocation_args.decode_args(raw)
    assert (err.value.path, err.value.message) == (path, message)
