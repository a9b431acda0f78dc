"""Run kube-pysched as a real process against the cluster under test.

The scheduler is started the way a user starts it (`python -m scheduler --config ...`), with its
own log file, a reserved loopback port for /metrics and /healthz, and stopped by its own pid.
That port is the development-only plain-HTTP `--port` (loopback); the secure port (HTTPS with
delegated authentication and authorization) is off (`--secure-port=0`) unless `secure=True`,
which reserves a loopback port for it too (`secure_url`).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.ports import LOOPBACK, PortReservation
from e2e.cluster.processes import ManagedProcess

SCHEDULER_NAME = "kube-pysched"
REPO_ROOT = Path(__file__).resolve().parent.parent


def default_config(**overrides: Any) -> dict[str, Any]:
    """A minimal KubeSchedulerConfiguration: one profile, no leader election."""
    doc: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
    }
    doc.update(overrides)
    return doc


class Pysched:
    """One kube-pysched process; `start()` returns once /readyz answers 200."""

    def __init__(
        self,
        kubeconfig: Path | str,
        config: Mapping[str, Any] | None = None,
        *,
        workdir: Path | None = None,
        name: str = "kube-pysched",
        extra_args: Sequence[str] = (),
        secure: bool = False,
        cpus: Iterable[int] | None = None,
    ) -> None:
        self.kubeconfig = Path(kubeconfig)
        self.config = dict(config) if config is not None else default_config()
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="kube-pysched-e2e-"))
        self.name = name
        self.extra_args = list(extra_args)
        self.cpus = set(cpus) if cpus is not None else None  # started pinned to these CPUs
        self.port = 0
        self.secure = secure
        self.secure_port = 0
        self.process: ManagedProcess | None = None

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def secure_url(self) -> str:
        """The HTTPS port's base URL (only with `secure=True`)."""
        if not self.secure_port:
            raise RuntimeError(f"{self.name} was started without its secure port")
        return f"https://{LOOPBACK}:{self.secure_port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def start(self, timeout: float = 90.0) -> Pysched:
        config_path = self.workdir / f"{self.name}.yaml"
        config_path.write_text(yaml.safe_dump(self.config, sort_keys=False))
        with PortReservation() as ports:
            self.port = ports.take()
            self.secure_port = ports.take() if self.secure else 0
            argv = [
                sys.executable,
                "-m",
                "scheduler",
                "--config",
                str(config_path),
                "--kubeconfig",
                str(self.kubeconfig),
                "--port",
                str(self.port),
                "--address",
                LOOPBACK,
                "--bind-address",
                LOOPBACK,
                "--secure-port",
                str(self.secure_port),
                *self.extra_args,
            ]
            env = dict(os.environ)
            env.pop("KUBECONFIG", None)
            self.process = ManagedProcess(
                self.name, argv, self.log_path, env=env, cwd=REPO_ROOT, cpus=self.cpus
            ).start()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if self.process is not None and not self.process.alive():
                raise RuntimeError(
                    f"kube-pysched exited with {self.process.returncode}:\n{self.tail()}"
                )
            try:
                status, body = self.get("/readyz")
                if status == 200:
                    return
                last = body
            except OSError as exc:
                last = str(exc)
            time.sleep(0.1)
        raise TimeoutError(f"kube-pysched not ready after {timeout}s ({last}):\n{self.tail()}")

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.base_url + path, timeout=timeout) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def metrics(self) -> str:
        status, body = self.get("/metrics")
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}: {body[:200]}")
        return body

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def log_records(self) -> Iterator[dict[str, Any]]:
        """The JSON lines of the process' log (other lines skipped)."""
        if not self.log_path.exists():
            return
        for line in self.log_path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record

    def tail(self, lines: int = 60) -> str:
        return self.process.tail(lines) if self.process is not None else ""

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.process is None:
            return None
        self.process.stop(timeout)
        return self.process.returncode


def metric_value(text: str, name: str, labels: Mapping[str, str] | None = None) -> float | None:
    """The value of one sample in Prometheus text exposition, or None if absent."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name != name:
                continue
            if labels and any(sample.labels.get(k) != v for k, v in labels.items()):
                continue
            return float(sample.value)
    return None
