"""The test DRA driver's slice building (e2e/dra/inventory.py): what the e2e scenarios rely on."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.dra.driver import Driver
from e2e.dra.inventory import (
    GPU_DRIVER,
    NIC_DRIVER,
    ConfigError,
    Node,
    device_statuses,
    node_slices,
    parse_config,
)

PROFILE = {
    "gpus": [
        {"model": "a100", "memory": "40Gi", "pcieRoot": "pci0", "numaNode": 0},
        {"model": "h100", "memory": "80Gi", "pcieRoot": "pci1", "driverVersion": "2.1.0"},
    ],
    "partitionable": [
        {
            "memory": "40Gi",
            "compute": 4,
            "partitions": [{"name": "half", "memory": "20Gi", "compute": 2, "count": 2}],
        }
    ],
    "nics": [{"pcieRoot": "pci1", "speed": 200}],
}
NODE = Node("node-a", "uid-a", "full")


def _config(**extra: Any) -> Any:
    return parse_config({"profiles": {"full": PROFILE, "empty": {}}, **extra})


def _by_name(slices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["metadata"]["name"]: s for s in slices}


def test_node_slices_one_pool_per_driver_named_after_the_node_owned_by_it() -> None:
    slices = _by_name(node_slices(_config(), NODE, {GPU_DRIVER: 3}))
    assert set(slices) == {"node-a-gpu-counters", "node-a-gpu", "node-a-nic"}
    for s in slices.values():
        assert s["spec"]["nodeName"] == "node-a"
        assert s["spec"]["pool"]["name"] == "node-a"
        (owner,) = s["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Node", "node-a", "uid-a")
    gpu, counters, nic = (
        slices[n]["spec"] for n in ("node-a-gpu", "node-a-gpu-counters", "node-a-nic")
    )
    assert gpu["driver"] == counters["driver"] == GPU_DRIVER and nic["driver"] == NIC_DRIVER
    # The GPU pool has two slices (counters apart from devices, as v1 requires) at generation 3.
    assert gpu["pool"] == {"name": "node-a", "generation": 3, "resourceSliceCount": 2}
    assert "devices" not in counters and "sharedCounters" not in gpu
    assert nic["pool"] == {"name": "node-a", "generation": 1, "resourceSliceCount": 1}


def test_gpu_attributes_capacity_and_partitions_consuming_the_parents_counters() -> None:
    slices = _by_name(node_slices(_config(), NODE, {}))
    devices = {d["name"]: d for d in slices["node-a-gpu"]["spec"]["devices"]}
    assert list(devices) == ["gpu-0", "gpu-1", "pgpu-0", "pgpu-0-half-0", "pgpu-0-half-1"]
    gpu1 = devices["gpu-1"]
    assert gpu1["attributes"]["model"] == {"string": "h100"}
    assert gpu1["attributes"]["driverVersion"] == {"version": "2.1.0"}
    assert gpu1["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci1"}
    assert gpu1["capacity"] == {"memory": {"value": "80Gi"}}
    (counter_set,) = slices["node-a-gpu-counters"]["spec"]["sharedCounters"]
    assert counter_set == {
        "name": "pgpu-0",
        "counters": {"memory": {"value": "40Gi"}, "compute": {"value": "4"}},
    }
    (whole,) = devices["pgpu-0"]["consumesCounters"]
    assert whole["counters"] == counter_set["counters"]
    (half,) = devices["pgpu-0-half-1"]["consumesCounters"]
    assert half == {
        "counterSet": "pgpu-0",
        "counters": {"memory": {"value": "20Gi"}, "compute": {"value": "2"}},
    }
    (nic,) = slices["node-a-nic"]["spec"]["devices"]
    assert nic["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci1"}


def test_taints_and_binding_conditions_only_on_the_named_device_of_the_named_node() -> None:
    taint = {"key": "e2e/broken", "value": "true", "effect": "NoSchedule"}
    binding = {"conditions": ["e2e/attached"], "failureConditions": ["e2e/failed"]}
    config = _config(taints={"node-a/gpu-1": [taint]}, binding={"node-a/nic-0": binding})
    slices = _by_name(node_slices(config, NODE, {}))
    devices = {d["name"]: d for d in slices["node-a-gpu"]["spec"]["devices"]}
    assert devices["gpu-1"]["taints"] == [taint]
    assert "taints" not in devices["gpu-0"]
    (nic,) = slices["node-a-nic"]["spec"]["devices"]
    assert nic["bindingConditions"] == ["e2e/attached"]
    assert nic["bindingFailureConditions"] == ["e2e/failed"]
    other = _by_name(node_slices(config, Node("node-b", "uid-b", "full"), {}))
    assert all("taints" not in d for d in other["node-b-gpu"]["spec"]["devices"])


def test_empty_profile_publishes_nothing_and_unknown_profile_is_an_error() -> None:
    assert node_slices(_config(), Node("n", "u", "empty"), {}) == []
    with pytest.raises(ConfigError, match="profile 'nope' is not configured"):
        node_slices(_config(), Node("n", "u", "nope"), {})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"profile": {}}, "config: unknown field"),
        ({"profiles": {"p": {"gpus": [{"modle": "x"}]}}}, r"profiles.p.gpus\[0\]: unknown field"),
        ({"profiles": {"p": {"nics": {}}}}, "profiles.p.nics: expected a list"),
        ({"taints": {"gpu-0": []}}, "is not <node>/<device>"),
        ({"binding": {"n/d": {"outcome": "maybe"}}}, "outcome: 'maybe' is not one of"),
        ({"profiles": {"p": {"partitionable": [{"partitions": [{}]}]}}}, "name is required"),
    ],
)
def test_bad_configuration_names_the_field(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(data)


def _claim(devices: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    results = [{"request": "r", "driver": NIC_DRIVER, "pool": "node-a", "device": "nic-0"}]
    status: dict[str, Any] = {"allocation": {"devices": {"results": results}}}
    if devices is not None:
        status["devices"] = devices
    return {"metadata": {"name": "c", "namespace": "ns"}, "status": status}


def test_binding_outcomes_set_the_conditions_once() -> None:
    binding = {"conditions": ["e2e/attached"], "failureConditions": ["e2e/failed"]}
    ready = _config(binding={"node-a/nic-0": binding})
    (status,) = device_statuses(ready, _claim(), "2026-01-01T00:00:00Z") or []
    assert (status["driver"], status["pool"], status["device"]) == (NIC_DRIVER, "node-a", "nic-0")
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("e2e/attached", "True")]
    # Already reported: nothing to write.
    assert device_statuses(ready, _claim([status]), "2026-01-01T00:00:01Z") is None
    failed = _config(binding={"node-a/nic-0": {**binding, "outcome": "failed"}})
    (status,) = device_statuses(failed, _claim(), "2026-01-01T00:00:00Z") or []
    assert [c["type"] for c in status["conditions"]] == ["e2e/failed"]
    pending = _config(binding={"node-a/nic-0": {**binding, "outcome": "pending"}})
    assert device_statuses(pending, _claim(), "2026-01-01T00:00:00Z") is None
    assert device_statuses(ready, {"metadata": {}, "status": {}}, "t") is None


class _Objects:
    """Records the driver's status patches."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, Any]] = []

    def patch_namespaced_custom_object_status(self, *args: Any) -> None:
        self.patches.append((args[4], args[5]))


def test_a_new_configuration_reaches_claims_allocated_before() -> None:
    binding = {"conditions": ["e2e/attached"], "failureConditions": ["e2e/failed"]}
    pending = _config(binding={"node-a/nic-0": {**binding, "outcome": "pending"}})
    driver = Driver(k8s.ApiClient(), pending, "profile")
    objects = _Objects()
    driver.objects = objects  # type: ignore[assignment]
    claim = _claim()
    claim["metadata"]["resourceVersion"] = "5"
    driver.claim_seen(claim)
    assert objects.patches == []  # pending: nothing reported
    driver.config = _config(binding={"node-a/nic-0": binding})
    driver.report_all()
    ((name, body),) = objects.patches
    assert name == "c" and body["metadata"] == {"resourceVersion": "5"}
    assert [c["type"] for c in body["status"]["devices"][0]["conditions"]] == ["e2e/attached"]
    driver.claim_deleted(claim)
    driver.report_all()
    assert len(objects.patches) == 1
