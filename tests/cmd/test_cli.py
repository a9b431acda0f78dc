"""The command line as a user meets it: the installed console script, exit codes, messages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scheduler import __version__

SCRIPT = Path(sys.executable).parent / "kube-pysched"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_version() -> None:
    result = run("--version")
    assert (result.returncode, result.stdout.strip()) == (0, f"kube-pysched {__version__}")


def test_help_lists_the_flags() -> None:
    result = run("--help")
    assert result.returncode == 0
    for flag in (
        "--config",
        "--kubeconfig",
        "--feature-gates",
        "--secure-port",
        "--bind-address",
        "--tls-cert-file",
        "--authorization-always-allow-paths",
        "--port",
        "--leader-elect",
        "--v",
    ):
        assert flag in result.stdout


def test_python_dash_m_is_the_same_program() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scheduler", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stdout.strip() == f"kube-pysched {__version__}"


def test_unknown_flag_and_bad_feature_gate_are_usage_errors() -> None:
    assert run("--no-such-flag").returncode == 2
    result = run("--feature-gates", "NoSuchGate=true")
    assert result.returncode == 2
    assert "unrecognized feature gate: NoSuchGate" in result.stderr


def test_invalid_config_exits_1_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "podInitialBackoffSeconds: 0\n"
    )
    result = run("--config", str(path))
    assert result.returncode == 1
    assert "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_plugin_args_exit_1_before_connecting(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\n"
        "profiles:\n- schedulerName: x\n  pluginConfig:\n  - name: NodeResourcesFit\n"
        "    args: {scoringStrategy: {type: Fancy}}\n"
    )
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\n"
    )
    result = run("--config", str(path), "--kubeconfig", str(kubeconfig), "--port", "0")
    assert result.returncode == 1
    # One line, naming the file, the field path from the file's root, the plugin and profile.
    assert result.stderr.splitlines() == [
        f"kube-pysched: {path}: profiles[0].pluginConfig[0].args.scoringStrategy.type: "
        'Unsupported value: "Fancy": supported values: "LeastAllocated", "MostAllocated", '
        "\"RequestedToCapacityRatio\" (plugin NodeResourcesFit, profile 'x')"
    ]
