"""Fixtures for the e2e suite: one cluster per session, a namespace and kwok nodes per test.

With $KUBECONFIG set, the suite runs against that cluster and starts nothing of the control
plane (see e2e.cluster.external); otherwise a local control plane is started for the session.
A failing test gets the tail of every control-plane log appended to its report.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import (
    ControlPlane,
    ExternalCluster,
    build,
    create_kwok_nodes,
    delete_kwok_nodes,
    ensure_helm,
    wait_default_service_account,
)
from e2e.cluster.dra_oracle import ensure_dra_oracle
from e2e.cluster.e2etest import build_e2e_test
from e2e.cluster.nodes import NodeFactory
from e2e.pysched import Pysched

Cluster = ControlPlane | ExternalCluster

_active: list[Cluster] = []
_failures: list[str] = []


def _external_kubeconfig() -> Path | None:
    value = os.environ.get("KUBECONFIG")
    return Path(value) if value else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e_test_binary: needs Kubernetes' e2e.test (built before the tests run)"
    )
    config.addinivalue_line("markers", "helm: needs the helm binary (built before the tests run)")
    config.addinivalue_line(
        "markers", "dra_oracle: needs the DRA allocation oracle (built before the tests run)"
    )
    config.addinivalue_line(
        "markers", "reliability: the fault tests of the reliability suite (docs/reliability.md)"
    )
    config.addinivalue_line(
        "markers",
        "reliability_long: a reliability test that runs for many minutes; deselected unless "
        "--run-long is given or RELIABILITY_LONG=1 (`make reliability` does)",
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-long",
        action="store_true",
        default=False,
        help="also run tests marked reliability_long (the churn soak)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselects the long reliability tests unless asked for: `make e2e` stays short."""
    if config.getoption("--run-long") or os.environ.get("RELIABILITY_LONG") == "1":
        return
    long = [item for item in items if item.get_closest_marker("reliability_long")]
    if long:
        config.hook.pytest_deselected(items=long)
        items[:] = [item for item in items if not item.get_closest_marker("reliability_long")]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the binaries before any test runs, outside pytest-timeout's per-test budget."""
    if not session.items or session.config.option.collectonly:
        return
    if not _external_kubeconfig():
        build()
        if any(item.get_closest_marker("e2e_test_binary") for item in session.items):
            build_e2e_test()
    if any(item.get_closest_marker("helm") for item in session.items):
        ensure_helm()
    if any(item.get_closest_marker("dra_oracle") for item in session.items):
        ensure_dra_oracle()


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """The cluster under test: $KUBECONFIG's if set, else a fresh local control plane."""
    kubeconfig = _external_kubeconfig()
    instance: Cluster = ExternalCluster(kubeconfig) if kubeconfig else ControlPlane()
    instance.start()
    _active.append(instance)
    try:
        yield instance
    finally:
        _active.remove(instance)
        if isinstance(instance, ControlPlane):
            # Keep the run directory (all logs) when something failed, for post-mortems.
            instance.stop(remove_workdir=False if _failures else None)
        else:
            instance.stop()


@pytest.fixture(scope="session")
def local_control_plane(cluster: Cluster) -> ControlPlane:
    """The session's ControlPlane; skips tests that need one when running against $KUBECONFIG."""
    if not isinstance(cluster, ControlPlane):
        pytest.skip("needs the local control plane (KUBECONFIG is set)")
    return cluster


@pytest.fixture(scope="session")
def api_client(cluster: Cluster) -> Iterator[k8s.ApiClient]:
    client = cluster.api_client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def core_v1(api_client: k8s.ApiClient) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client)


@pytest.fixture
def namespace(core_v1: k8s.CoreV1Api, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace (deleted afterwards); yielded once pods can be created in it."""
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"e2e-{base}-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    try:
        wait_default_service_account(core_v1, name)
        yield name
    finally:
        try:
            core_v1.delete_namespace(name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


@pytest.fixture
def kwok_nodes(core_v1: k8s.CoreV1Api) -> Iterator[NodeFactory]:
    """Factory ``kwok_nodes(count, **create_kwok_node_args)``; nodes are Ready when returned.

    Names are unique per call, and every node created is deleted after the test.
    """
    created: list[str] = []

    def make(count: int = 1, **kwargs: Any) -> list[k8s.V1Node]:
        prefix = kwargs.pop("prefix", f"kwok-{uuid.uuid4().hex[:6]}-")
        nodes = create_kwok_nodes(core_v1, count, prefix, **kwargs)
        created.extend(n.metadata.name for n in nodes)
        return nodes

    yield make
    delete_kwok_nodes(core_v1, created)


@pytest.fixture
def kwok_node(kwok_nodes: NodeFactory) -> k8s.V1Node:
    """A single Ready kwok node (32 CPU, 256Gi, 110 pods)."""
    return kwok_nodes(1)[0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Attach the control-plane log tails to the report of a failing e2e test."""
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    if report.failed and _active:
        _failures.append(item.nodeid)
        cluster = _active[-1]
        note = f"(full logs kept in {cluster.log_dir})\n"
        report.sections.append(("control plane logs (tail)", note + cluster.tail_logs(40)))
    return report


@pytest.fixture
def pysched(
    cluster: Cluster, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., Pysched]]:
    """Factory starting kube-pysched processes (stopped after the test; logs shown on failure).

    ``pysched(config=None, name=..., kubeconfig=...)``: each test passes its own profile
    schedulerName so that concurrent or leftover pods of other tests are never its business.
    """
    started: list[Pysched] = []

    def start(config: dict[str, Any] | None = None, **kwargs: Any) -> Pysched:
        name = kwargs.pop("name", f"kube-pysched-{len(started) + 1}")
        kubeconfig = kwargs.pop("kubeconfig", cluster.kubeconfig)
        proc = Pysched(kubeconfig, config, workdir=tmp_path, name=name, **kwargs)
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for proc in started:
            print(f"----- {proc.name} log tail ({proc.log_path}) -----\n{proc.tail(80)}")
