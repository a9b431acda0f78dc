"""PodGroups in e2e tests: the chart's CRDs installed, scheduler-plugins' PodGroup created,
kube-pysched-controller run as a process (`Controller`, fixture `controllers`)."""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes.client as k8s
import pytest
import yaml

from e2e.cluster import ManagedProcess
from e2e.cluster.ports import LOOPBACK, PortReservation
from e2e.cluster.readiness import wait_for
from e2e.conftest import Cluster
from e2e.pysched import REPO_ROOT, metric_value

CRDS = REPO_ROOT / "charts" / "kube-pysched" / "crds"
PODGROUP_CRD = CRDS / "scheduling.x-k8s.io_podgroups.yaml"
GROUP, VERSION, PLURAL = "scheduling.x-k8s.io", "v1alpha1", "podgroups"
LABEL = "scheduling.x-k8s.io/pod-group"
RECONCILES = "kube_pysched_controller_reconciles_total"


def apply_crds(api_client: k8s.ApiClient, path: Path) -> list[str]:
    """Creates the CRDs in `path` (existing ones kept) and waits until they are Established."""
    ext = k8s.ApiextensionsV1Api(api_client)
    names = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        names.append(doc["metadata"]["name"])
        try:
            ext.create_custom_resource_definition(doc)
        except k8s.ApiException as exc:
            if exc.status != 409:
                raise
    for name in names:

        def established(name: str = name) -> bool | str:
            crd = ext.read_custom_resource_definition(name)
            conditions = {c.type: c.status for c in crd.status.conditions or []}
            return conditions.get("Established") == "True" or f"{name} not established"

        wait_for(established, timeout=30, what=f"CRD {name} established")
    return names


def create_podgroup(
    api_client: k8s.ApiClient, namespace: str, name: str, min_member: int, **spec: Any
) -> dict[str, Any]:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, **spec},
    }
    created: dict[str, Any] = k8s.CustomObjectsApi(api_client).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, body
    )
    return created


class Controller:
    """One kube-pysched-controller process; `start()` returns once kopf's /healthz answers."""

    def __init__(self, kubeconfig: Path, workdir: Path, name: str, *args: str) -> None:
        self.kubeconfig = kubeconfig
        self.name = name
        self.log_path = workdir / f"{name}.log"
        self.args = list(args)
        self.liveness_port = self.metrics_port = 0
        self.process: ManagedProcess | None = None

    def start(self, timeout: float = 60.0) -> Controller:
        with PortReservation() as ports:
            self.liveness_port, self.metrics_port = ports.take(), ports.take()
            argv = [
                sys.executable,
                "-m",
                "controller",
                "--kubeconfig",
                str(self.kubeconfig),
                "--liveness-address",
                LOOPBACK,
                "--liveness-port",
                str(self.liveness_port),
                "--metrics-address",
                LOOPBACK,
                "--metrics-port",
                str(self.metrics_port),
                *self.args,
            ]
            env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
            self.process = ManagedProcess(
                self.name, argv, self.log_path, env=env, cwd=REPO_ROOT
            ).start()
        wait_for(
            lambda: self._get(self.liveness_port, "/healthz")[0] == 200 or "not healthy yet",
            timeout=timeout,
            what=f"{self.name} /healthz",
            guard=self._alive,
        )
        return self

    def _alive(self) -> None:
        if self.process is not None and not self.process.alive():
            raise RuntimeError(f"{self.name} exited:\n{self.tail()}")

    def _get(self, port: int, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{port}{path}", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, ""
        except OSError:
            return 0, ""

    def reconciles(self) -> float:
        status, body = self._get(self.metrics_port, "/metrics")
        assert status == 200, f"{self.name} /metrics answered {status}"
        return sum(
            metric_value(body, RECONCILES, {"result": result}) or 0.0
            for result in ("changed", "unchanged", "error")
        )

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def tail(self, lines: int = 60) -> str:
        return self.process.tail(lines) if self.process is not None else ""

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(20.0)


@pytest.fixture(name="controllers")
def controllers_fixture(
    cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Controller]]:
    started: list[Controller] = []

    def start(name: str, *args: str) -> Controller:
        proc = Controller(Path(cluster.kubeconfig), tmp_path, name, *args)
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for proc in started:
            print(f"----- {proc.name} log tail ({proc.log_path}) -----\n{proc.tail(80)}")
