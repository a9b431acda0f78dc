"""Client fixtures built on the session's `cluster` (this file starts no control plane)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from scheduler.client import ClientConfig, KubeApi, RestClient, load_client_config

#: A scheduler name nobody serves: pods with it stay Pending until a test binds them.
UNSERVED_SCHEDULER = "kube-pysched-e2e-nobody"


@pytest.fixture(scope="session")
def client_config(cluster: Any) -> ClientConfig:
    return load_client_config(cluster.kubeconfig, qps=-1)


@pytest.fixture
def rest(client_config: ClientConfig) -> Iterator[RestClient]:
    client = RestClient(client_config)
    yield client
    client.close()


@pytest.fixture
def kube_api(rest: RestClient) -> KubeApi:
    return KubeApi(rest)


def pod_manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": UNSERVED_SCHEDULER,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
            **spec,
        },
    }


@pytest.fixture
def make_pod(rest: RestClient, namespace: str) -> Callable[..., dict[str, Any]]:
    """Creates a pending pod in the test namespace; returns the created object."""

    def make(name: str, **spec: Any) -> dict[str, Any]:
        created: dict[str, Any] = rest.post(
            f"/api/v1/namespaces/{namespace}/pods", pod_manifest(name, **spec)
        )
        return created

    return make


@pytest.fixture
def make_node(rest: RestClient) -> Iterator[Callable[..., dict[str, Any]]]:
    """Creates plain (not kwok-managed) nodes, deleted after the test."""
    created: list[str] = []

    def make(prefix: str = "client-e2e") -> dict[str, Any]:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        node: dict[str, Any] = rest.post(
            "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        )
        created.append(name)
        return node

    yield make
    for name in created:
        with contextlib.suppress(Exception):
            rest.delete(f"/api/v1/nodes/{name}")
