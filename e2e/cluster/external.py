"""Run the e2e suite against a cluster we did not start ($KUBECONFIG, e.g. kind).

Nothing of the control plane is started and no kube-scheduler binary is assumed. kwok is the
one thing the tests need beside the cluster: unless the cluster already runs a
``kwok-controller`` Deployment in kube-system, a local kwok process (built on demand, it is
only a client of the API server) is pointed at the cluster with the harness' own stages.
A cluster started by ``python -m e2e.cluster up`` already has kwok and is recognised.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from e2e.cluster import kwok
from e2e.cluster import state as cluster_state
from e2e.cluster.build import ensure_kwok
from e2e.cluster.ports import PortReservation
from e2e.cluster.processes import ManagedProcess
from e2e.cluster.readiness import probe, wait_for

#: "auto" (default), "local" (always run kwok here) or "cluster" (kwok already deployed).
KWOK_MODE_ENV = "KUBE_PYSCHED_KWOK"


class ExternalCluster:
    """The cluster named by a kubeconfig, plus (if needed) a local kwok process."""

    with_scheduler = True  # a real cluster brings its own default scheduler

    def __init__(self, kubeconfig: Path | str) -> None:
        self._kubeconfig = Path(kubeconfig).expanduser().resolve()
        self._workdir = Path(tempfile.mkdtemp(prefix="kube-pysched-ext-"))
        self._kwok: ManagedProcess | None = None

    @property
    def kubeconfig(self) -> Path:
        return self._kubeconfig

    @property
    def server(self) -> str:
        doc = yaml.safe_load(self._kubeconfig.read_text())
        current = doc.get("current-context")
        ctx = next(c["context"] for c in doc["contexts"] if c["name"] == current)
        return str(
            next(c["cluster"]["server"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
        )

    @property
    def log_dir(self) -> Path:
        return self._workdir / "logs"

    @property
    def processes(self) -> dict[str, ManagedProcess]:
        return {"kwok": self._kwok} if self._kwok is not None else {}

    @property
    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.processes.items()}

    def api_client(self) -> k8s.ApiClient:
        return k8s_config.new_client_from_config(config_file=str(self._kubeconfig))

    def start(self) -> ExternalCluster:
        mode = os.environ.get(KWOK_MODE_ENV, "auto")
        if mode == "cluster" or (mode == "auto" and self._has_kwok()):
            return self
        binary = ensure_kwok()
        config = kwok.write_config(self._workdir / "kwok.yaml")
        with PortReservation() as ports:
            port = ports.take()
            self._kwok = ManagedProcess(
                "kwok",
                kwok.command(binary, self._kubeconfig, config, port),
                self.log_dir / "kwok.log",
                env=kwok.environment(self._workdir / "kwok", dict(os.environ)),
                cwd=self._workdir,
            ).start()

            def guard() -> None:
                if self._kwok is not None and self._kwok.returncode is not None:
                    raise RuntimeError(f"kwok exited: {self._kwok.tail(5)}")

            wait_for(
                lambda: probe(f"http://127.0.0.1:{port}/healthz", expect="ok"),
                timeout=120,
                what="kwok",
                guard=guard,
            )
        return self

    def stop(self) -> None:
        if self._kwok is not None:
            self._kwok.stop()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def tail_logs(self, lines: int = 40) -> str:
        if self._kwok is None:
            return f"(external cluster {self.server}: no local process logs)"
        return f"----- kwok (pid {self._kwok.pid}) -----\n{self._kwok.tail(lines)}"

    def __enter__(self) -> ExternalCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _has_kwok(self) -> bool:
        """kwok already serves this cluster: our own `up` cluster, or a kwok Deployment."""
        recorded = cluster_state.load()
        if recorded is not None and Path(recorded.kubeconfig).resolve() == self._kubeconfig:
            return True
        try:
            k8s.AppsV1Api(self.api_client()).read_namespaced_deployment(
                "kwok-controller", "kube-system"
            )
        except k8s.ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True
