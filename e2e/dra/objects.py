"""resource.k8s.io/v1 objects for the DRA e2e tests: the generic object API, a node's slice
as scheduler_perf publishes one (through the API, no kubelet plugin), and the fixtures giving
each test a driver name with its DeviceClass, cleaned up afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kubernetes import client as k8s

GROUP, VERSION = "resource.k8s.io", "v1"


class Resources:
    """resource.k8s.io/v1 through the generic object API (JSON in, JSON out)."""

    def __init__(self, api_client: k8s.ApiClient) -> None:
        self.api = k8s.CustomObjectsApi(api_client)

    def create(self, plural: str, body: dict[str, Any], namespace: str | None = None) -> None:
        if namespace is None:
            self.api.create_cluster_custom_object(GROUP, VERSION, plural, body)
        else:
            self.api.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, body)

    def list(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        found: Any = (
            self.api.list_cluster_custom_object(GROUP, VERSION, plural)
            if namespace is None
            else self.api.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)
        )
        items: list[dict[str, Any]] = found["items"]
        return items

    def delete(self, plural: str, name: str) -> None:
        self.api.delete_cluster_custom_object(GROUP, VERSION, plural, name)

    def delete_driver(self, driver: str, device_class: str) -> None:
        """The driver's slices (cluster-scoped) and its DeviceClass."""
        for s in self.list("resourceslices"):
            if s["spec"]["driver"] == driver:
                self.delete("resourceslices", s["metadata"]["name"])
        self.delete("deviceclasses", device_class)


def node_slice(node: str, driver: str, devices: Sequence[str]) -> dict[str, Any]:
    """The one slice of a node's pool (named after the node) listing `devices`."""
    return {
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": d} for d in devices],
        },
    }


def driver_class(driver: str) -> dict[str, Any]:
    """A DeviceClass named as the driver, selecting its devices."""
    selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
    return {"metadata": {"name": driver}, "spec": {"selectors": [selector]}}


@pytest.fixture(name="resources")
def resources_fixture(api_client: k8s.ApiClient) -> Resources:
    return Resources(api_client)


@pytest.fixture(name="driver")
def driver_fixture(resources: Resources) -> Iterator[str]:
    """A driver name of the test's own and its DeviceClass (same name); the class and the
    driver's slices are deleted afterwards."""
    name = f"gpu-{uuid.uuid4().hex[:6]}.example.com"
    resources.create("deviceclasses", driver_class(name))
    yield name
    resources.delete_driver(name, name)
