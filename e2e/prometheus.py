"""A real Prometheus for the monitoring tests: Debian's `prometheus` package and one process.

`ensure()` finds `prometheus` and `promtool` on PATH; when they are missing it installs Debian's
package (`apt-get install -y --no-install-recommends prometheus`, after `apt-get update` when the
package lists do not know it yet; e2e/system_packages.py), as `make system-packages` (a
prerequisite of `make e2e`) does.
Without apt-get, or not as root, it raises `PrometheusUnavailable` with the reason, which the
tests turn into a skip - except under CI (`$CI` set), where a missing Prometheus fails.
Debian's maintainer scripts start no daemon here (`policy-rc.d` / no init system); the tests
only ever run their own process.

`PrometheusServer` runs one Prometheus process on a reserved loopback port with a config and
rule files the test writes, its TSDB in the test's directory, stopped by its own pid.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e import system_packages
from e2e.cluster.ports import LOOPBACK, PortReservation
from e2e.cluster.processes import ManagedProcess

PACKAGE = "prometheus"


class PrometheusUnavailable(RuntimeError):
    """Prometheus is not installed and cannot be installed on this machine."""


@dataclass(frozen=True)
class Binaries:
    prometheus: Path
    promtool: Path


def find() -> Binaries | None:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus and promtool:
        return Binaries(Path(prometheus), Path(promtool))
    return None


def install() -> Binaries:
    """Debian's prometheus package; raises PrometheusUnavailable when apt cannot be used."""
    try:
        system_packages.install([PACKAGE])
    except system_packages.Unavailable as exc:
        raise PrometheusUnavailable(str(exc)) from exc
    found = find()
    if found is None:
        raise PrometheusUnavailable(f"'{PACKAGE}' installed but prometheus/promtool not on PATH")
    return found


def ensure() -> Binaries:
    """The binaries, installing Debian's package when they are missing."""
    return find() or install()


def require() -> Binaries:
    """For tests: the binaries, or a skip with the reason (a failure under CI)."""
    import pytest

    try:
        return ensure()
    except PrometheusUnavailable as exc:
        message = f"PROMETHEUS UNAVAILABLE, monitoring tests not run: {exc}"
        if os.environ.get("CI"):
            pytest.fail(message)
        print(f"\n*** {message}", file=sys.stderr)
        pytest.skip(message)


class PrometheusServer:
    """One Prometheus process serving its HTTP API on a reserved loopback port."""

    def __init__(self, binary: Path, workdir: Path, config: dict[str, Any]) -> None:
        self.binary = binary
        self.workdir = workdir
        self.config = config
        self.port = 0
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        config_path = self.workdir / "prometheus.yml"
        config_path.write_text(yaml.safe_dump(self.config, sort_keys=False))
        with PortReservation() as ports:
            self.port = ports.take()
            argv = [
                str(self.binary),
                f"--config.file={config_path}",
                f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                f"--web.listen-address={LOOPBACK}:{self.port}",
                "--web.enable-lifecycle",
                "--log.level=info",
            ]
            self.process = ManagedProcess(
                "prometheus", argv, self.workdir / "prometheus.log", cwd=self.workdir
            ).start()
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if not self.process.alive():
                raise RuntimeError(f"prometheus exited:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=5) as resp:
                    if resp.status == 200:
                        return self
            except (OSError, urllib.error.URLError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise TimeoutError(f"prometheus not ready after {timeout}s ({last}):\n{self.tail()}")

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/<path>; the `data` of a success answer, else RuntimeError."""
        query = urllib.parse.urlencode(params)
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as err:
            body = json.loads(err.read() or b"{}")
        if body.get("status") != "success":
            raise RuntimeError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result vector (scalars and strings come back as one sample)."""
        data = self.api("query", query=expr)
        result = data["result"]
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": result}]
        return list(result)

    def tail(self, lines: int = 40) -> str:
        return self.process.tail(lines) if self.process is not None else ""

    def stop(self, timeout: float = 20.0) -> None:
        if self.process is not None:
            self.process.stop(timeout)
