"""cli.main in process: flags and the config file become Options handed to app.run."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scheduler import __version__
from scheduler.cmd import cli
from scheduler.cmd.options import Options
from scheduler.config.defaults import KUBE_SCHEDULER_MULTI_POINT
from scheduler.framework.registry import RegistryError
from scheduler.logging import reset_logging

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    """main configures logging for the process; later tests must not log into captured streams."""
    yield
    reset_logging()


#: Every default plugin name: the default profile needs each registered.
PLUGINS = tuple(name for name, _ in KUBE_SCHEDULER_MULTI_POINT)


def _install(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: object) -> None:
    """Puts a stand-in module where main imports it lazily, so these tests need only the CLI."""
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], object]], None]:
    def install(full_registry: Callable[[], object]) -> None:
        _install(monkeypatch, "scheduler.plugins.registry", full_registry=full_registry)

    install(lambda: dict.fromkeys(PLUGINS))
    return install


@pytest.fixture
def run_result(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    def install(code: int) -> None:
        _install(monkeypatch, "scheduler.cmd.app", run=lambda options, **_: code)

    return install


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch, fake_registry: object) -> list[Options]:
    """Replaces the process wiring: main's result is app.run's, and the options are kept."""
    seen: list[Options] = []

    def fake_run(options: Options, **_: object) -> int:
        seen.append(options)
        return 0

    _install(monkeypatch, "scheduler.cmd.app", run=fake_run)
    return seen


def test_defaults_without_flags(captured: list[Options]) -> None:
    assert cli.main([]) == 0
    (options,) = captured
    assert options.config.profiles[0].scheduler_name == "kube-pysched"
    # kube-scheduler's whole default list, never filtered to what the registry provides.
    multi_point = options.config.profiles[0].to_spec().plugin_set("multiPoint").enabled
    assert [ref.name for ref in multi_point] == list(PLUGINS)
    secure = options.secure_serving
    assert (secure.bind_address, secure.port) == ("0.0.0.0", 10259)  # HTTPS, as kube-scheduler
    assert (secure.cert_file, secure.key_file, secure.client_ca_file) == ("", "", "")
    assert (secure.token_cache_ttl, secure.authorized_ttl, secure.unauthorized_ttl) == (10, 10, 10)
    assert secure.always_allow_paths == ("/healthz", "/readyz", "/livez")
    assert (options.address, options.port) == ("127.0.0.1", 0)  # no plain HTTP by default
    assert options.master is None
    assert options.config.client_connection.kubeconfig == ""
    assert options.config.leader_election.leader_elect is True  # kube-scheduler's default
    assert (options.log_format, options.verbosity) == ("json", 0)
    assert options.pod_max_in_unschedulable_pods_duration == 300.0
    assert options.feature_gates.enabled("SchedulerQueueingHints")


def test_flags_and_config_file(captured: list[Options], tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + "parallelism: 3\nleaderElection: {leaderElect: true}\n")
    code = cli.main(
        [
            "--config",
            str(path),
            "--kubeconfig",
            "/kc",
            "--master",
            "http://127.0.0.1:8080",
            "--feature-gates",
            "SchedulerQueueingHints=false",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            "0",
            "--port",
            "8080",
            "--address",
            "::1",
            "--tls-cert-file=/c.crt",
            "--tls-private-key-file=/c.key",
            "--client-ca-file=/ca.crt",
            "--authentication-token-webhook-cache-ttl=1m",
            "--authorization-webhook-cache-authorized-ttl=0s",
            "--authorization-webhook-cache-unauthorized-ttl=2s",
            "--authorization-always-allow-paths=/healthz,/debug/*",
            "--leader-elect=false",
            "--log-format",
            "console",
            "--v=4",
            "--pod-max-in-unschedulable-pods-duration",
            "1m30s",
        ]
    )
    assert code == 0
    (options,) = captured
    assert options.config.parallelism == 3
    assert options.master == "http://127.0.0.1:8080"
    assert not options.feature_gates.enabled("SchedulerQueueingHints")
    secure = options.secure_serving
    assert (secure.bind_address, secure.port) == ("127.0.0.1", 0)
    assert (secure.cert_file, secure.key_file, secure.client_ca_file) == (
        "/c.crt",
        "/c.key",
        "/ca.crt",
    )
    assert (secure.token_cache_ttl, secure.authorized_ttl, secure.unauthorized_ttl) == (60, 0, 2)
    assert secure.always_allow_paths == ("/healthz", "/debug/*")
    assert (options.address, options.port) == ("::1", 8080)
    assert (options.log_format, options.verbosity) == ("console", 4)
    assert options.pod_max_in_unschedulable_pods_duration == 90.0
    # Flags win over the file, and /configz shows what is in effect.
    assert options.config.leader_election.leader_elect is False
    assert options.config.client_connection.kubeconfig == "/kc"


def test_leader_elect_alone_means_true_and_secure_port_is_not_the_plain_port(
    captured: list[Options],
) -> None:
    assert cli.main(["--leader-elect", "--secure-port", "12345", "-v", "2"]) == 0
    leader_elect = captured[0].config.leader_election.leader_elect
    assert (leader_elect, captured[0].secure_serving.port, captured[0].verbosity) == (
        True,
        12345,
        2,
    )
    assert captured[0].port == 0


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "10.1.2.3", "example.com"])
def test_plain_port_refuses_a_non_loopback_address(
    captured: list[Options], address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--port", "8080", "--address", address]) == 2
    assert not captured
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err == (
        f"kube-pysched: --address {address} is not a loopback address: the plain-HTTP --port "
        "has no authentication and serves loopback only; use --secure-port"
    )


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_plain_port_accepts_loopback(captured: list[Options], address: str) -> None:
    assert cli.main(["--port", "8080", "--address", address]) == 0
    assert (captured[0].address, captured[0].port) == (address, 8080)


def test_exit_code_is_app_runs(fake_registry: object, run_result: Callable[[int], None]) -> None:
    run_result(1)
    assert cli.main([]) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "70000"], "port 70000 is not in the range 0-65535"),
        (["--secure-port", "-1"], "port -1 is not in the range 0-65535"),
        (["--authentication-token-webhook-cache-ttl=-1s"], "must not be negative"),
        (["--authorization-always-allow-paths", "/a*b"], "only a trailing * is allowed"),
        (["--v", "-1"], "verbosity must be 0 or more"),
        (["--v", "x"], "invalid verbosity 'x'"),
        (["--explain-max-pods", "-1"], "pod count must be 0 or more"),
        (["--log-format", "xml"], "invalid choice: 'xml'"),
        (["--pod-max-in-unschedulable-pods-duration", "5x"], 'time: invalid duration "5x"'),
        (["--leader-elect=maybe"], "expected true or false"),
        (["--feature-gates", "Nope=true"], "unrecognized feature gate: Nope"),
        (["--feature-gates", "SchedulerQueueingHints"], "expected Name=true|false"),
        (
            ["--feature-gates", "DynamicResourceAllocation=false"],
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
        ),
        (["stray"], "unrecognized arguments: stray"),
    ],
)
def test_usage_errors_return_2_without_running(
    argv: list[str], message: str, captured: list[Options], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert captured == []


def test_version_and_help_return_0(
    captured: list[Options], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"kube-pysched {__version__}"
    assert cli.main(["--help"]) == 0
    assert "plain http" in capsys.readouterr().out.lower()
    assert captured == []


def test_config_errors_go_to_stderr_one_per_line_and_exit_1(
    captured: list[Options], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(HEAD + "parallelism: 0\nextenders: [{urlPrefix: 'http://x'}]\n")
    assert cli.main(["--config", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: parallelism: Invalid value: 0: should be an integer value greater than zero",
        f"{path}: extenders: Forbidden: extenders are not supported by kube-pysched",
    ]
    assert captured == []


def test_a_default_plugin_missing_from_the_registry_is_an_error_not_a_dropped_plugin(
    fake_registry: Callable[[Callable[[], object]], None],
    captured: list[Options],
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_registry(lambda: dict.fromkeys(p for p in PLUGINS if p != "InterPodAffinity"))
    assert cli.main([]) == 1
    assert capsys.readouterr().err.splitlines() == [
        '<config>: profiles[0].plugins.multiPoint: Invalid value: "InterPodAffinity": no plugin '
        "of this name in this build of kube-pysched (profile 'kube-pysched')"
    ]
    assert captured == []


def test_registry_errors_exit_1(
    fake_registry: Callable[[Callable[[], object]], None],
    captured: list[Options],
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken() -> object:
        raise RegistryError("plugin 'X' is registered twice")

    fake_registry(broken)
    assert cli.main([]) == 1
    assert "kube-pysched: plugin 'X' is registered twice" in capsys.readouterr().err
    assert captured == []
