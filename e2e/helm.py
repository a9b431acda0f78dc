"""Run helm (built from its Go module, e2e.cluster.build.ensure_helm) against the chart.

Also renders deploy/kube-pysched.yaml: the chart's default render for release
``kube-pysched`` in ``kube-system``, checked in so that users without helm get the same
objects. ``python -m e2e.helm render-deploy`` rewrites it (``make deploy-manifests``);
``--check`` only compares, as e2e/test_chart.py does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.build import ensure_helm

REPO_ROOT = Path(__file__).resolve().parent.parent
CHART = REPO_ROOT / "charts" / "kube-pysched"
DEPLOY_MANIFEST = REPO_ROOT / "deploy" / "kube-pysched.yaml"
DEPLOY_RELEASE = "kube-pysched"
DEPLOY_NAMESPACE = "kube-system"
DEPLOY_HEADER = (
    "# Generated from charts/kube-pysched with its default values (release kube-pysched in\n"
    "# kube-system): `make deploy-manifests`. Do not edit; change the chart and regenerate.\n"
    "# e2e/test_chart.py fails when this file and the chart's render differ.\n"
)

#: Guards each helm call against a hang (not a timing expectation: installs do not --wait).
HELM_CALL_TIMEOUT = 300.0


class HelmError(RuntimeError):
    """helm exited non-zero; ``stderr`` is its message."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"helm {' '.join(args)} exited {returncode}:\n{stderr}")
        self.returncode = returncode
        self.stderr = stderr


class Helm:
    """One helm binary with its own (throwaway) config, cache and data directories."""

    def __init__(self, binary: Path, home: Path, kubeconfig: Path | None = None) -> None:
        self.binary = binary
        self.home = home
        self.kubeconfig = kubeconfig

    def run(self, *args: str) -> str:
        """Run helm; return its stdout, or raise HelmError with its stderr."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_")}
        env.pop("KUBECONFIG", None)
        for name in ("cache", "config", "data"):
            env[f"HELM_{name.upper()}_HOME"] = str(self.home / name)
        argv = [str(self.binary), *args]
        if self.kubeconfig is not None:
            argv += ["--kubeconfig", str(self.kubeconfig)]
        proc = subprocess.run(
            argv,
            env=env,
            capture_output=True,
            text=True,
            timeout=HELM_CALL_TIMEOUT,
            check=False,
        )
        if proc.returncode != 0:
            raise HelmError(args, proc.returncode, proc.stderr)
        return proc.stdout

    def template(
        self,
        release: str,
        namespace: str,
        values: Mapping[str, Any] | None = None,
        *extra: str,
    ) -> str:
        return self.run(
            "template", release, str(CHART), "--namespace", namespace, *self._values(values), *extra
        )

    def install(self, release: str, namespace: str, values: Mapping[str, Any] | None = None) -> str:
        return self.run(
            "install", release, str(CHART), "--namespace", namespace, *self._values(values)
        )

    def uninstall(self, release: str, namespace: str) -> str:
        return self.run("uninstall", release, "--namespace", namespace, "--wait")

    def _values(self, values: Mapping[str, Any] | None) -> list[str]:
        if not values:
            return []
        self.home.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="values-", suffix=".yaml", dir=self.home)
        with os.fdopen(fd, "w") as fh:
            yaml.safe_dump(dict(values), fh, sort_keys=False)
        return ["--values", name]


def render_deploy(helm: Helm) -> str:
    """deploy/kube-pysched.yaml's expected content: header plus the default render, the
    chart's CRDs (crds/, which `helm install` applies itself) included."""
    return DEPLOY_HEADER + helm.template(DEPLOY_RELEASE, DEPLOY_NAMESPACE, None, "--include-crds")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.helm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_render = sub.add_parser("render-deploy", help=f"write {DEPLOY_MANIFEST.name}")
    p_render.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="helm-home-") as home:
        expected = render_deploy(Helm(ensure_helm(), Path(home)))
    rel = DEPLOY_MANIFEST.relative_to(REPO_ROOT)
    if args.check:
        current = DEPLOY_MANIFEST.read_text() if DEPLOY_MANIFEST.exists() else ""
        if current != expected:
            print(f"{rel} is stale: run `make deploy-manifests`", file=sys.stderr)
            return 1
        print(f"{rel} matches the chart's default render")
        return 0
    DEPLOY_MANIFEST.parent.mkdir(parents=True, exist_ok=True)
    DEPLOY_MANIFEST.write_text(expected)
    print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
