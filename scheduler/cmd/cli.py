"""`kube-pysched` / `python -m scheduler`: flags, config loading, then the process (app.run).

Exit codes: 0 clean shutdown, 1 configuration or runtime error, 2 bad command line.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Callable, Mapping, Sequence

from scheduler import __version__
from scheduler.cmd.options import (
    DEFAULT_ALWAYS_ALLOW_PATHS,
    DEFAULT_AUTH_CACHE_TTL,
    DEFAULT_EXPLAIN_MAX_PODS,
    DEFAULT_MAX_IN_UNSCHEDULABLE,
    DEFAULT_SECURE_PORT,
    LOOPBACK_ADDRESS,
    Options,
    SecureServing,
)
from scheduler.cmd.zpages import flag_values
from scheduler.config import ConfigError, load_config
from scheduler.config.duration import parse_duration
from scheduler.config.types import KubeSchedulerConfiguration
from scheduler.features import FeatureGateError, FeatureGates
from scheduler.logging import LOG_FORMATS, configure_logging

EXIT_USAGE = 2


def _duration(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than zero, got {text!r}")
    return seconds


def _ttl(text: str) -> float:
    """A cache TTL: 0 disables the cache, as apiserver's."""
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return seconds


def _paths(text: str) -> tuple[str, ...]:
    """A comma-separated list of HTTP paths; "/prefix/*" matches a prefix."""
    paths = tuple(p.strip() for p in text.split(",") if p.strip())
    for path in paths:
        if "*" in path[:-1]:
            raise argparse.ArgumentTypeError(f"only a trailing * is allowed, got {path!r}")
    return paths


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _feature_gates(text: str) -> FeatureGates:
    try:
        return FeatureGates.parse(text)
    except FeatureGateError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def non_negative(what: str) -> Callable[[str], int]:
    """An argparse type for a whole number of 0 or more; `what` names it in the error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {what} {text!r}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{what} must be 0 or more, got {value}")
        return value

    return parse


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is not in the range 0-65535")
    return port


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kube-pysched",
        description=(
            "A Kubernetes scheduler in Python with kube-scheduler's behaviour. Runs as a "
            "secondary scheduler: pods opt in with spec.schedulerName (default profile: "
            "kube-pysched)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"kube-pysched {__version__}")
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file; "
        "without it kube-scheduler's defaults apply",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file; overrides clientConnection.kubeconfig (default: in-cluster "
        "config, then $KUBECONFIG, then ~/.kube/config)",
    )
    parser.add_argument("--master", metavar="URL", help="API server address; overrides kubeconfig")
    parser.add_argument(
        "--feature-gates",
        metavar="A=true,B=false",
        type=_feature_gates,
        default=FeatureGates(),
        help="kube-scheduler feature gates that kube-pysched implements",
    )
    secure = parser.add_argument_group(
        "secure serving",
        "HTTPS for /metrics, /configz, /healthz, /livez, /readyz with delegated authentication "
        "(TokenReview) and authorization (SubjectAccessReview), as kube-scheduler",
    )
    secure.add_argument(
        "--bind-address",
        default="0.0.0.0",
        metavar="ADDRESS",
        help="address of the secure port (default 0.0.0.0: all interfaces)",
    )
    secure.add_argument(
        "--secure-port",
        type=_port,
        default=DEFAULT_SECURE_PORT,
        help=f"HTTPS port; 0 serves no HTTPS at all (default {DEFAULT_SECURE_PORT})",
    )
    secure.add_argument(
        "--tls-cert-file",
        default="",
        metavar="PATH",
        help="serving certificate (PEM, followed by any intermediates); without it and "
        "--tls-private-key-file a certificate for localhost/127.0.0.1 is generated at start",
    )
    secure.add_argument(
        "--tls-private-key-file", default="", metavar="PATH", help="key of --tls-cert-file"
    )
    secure.add_argument(
        "--client-ca-file",
        default="",
        metavar="PATH",
        help="CA bundle: a client certificate it signed authenticates as its CN (user) and "
        "O (groups)",
    )
    secure.add_argument(
        "--authentication-token-webhook-cache-ttl",
        type=_ttl,
        default=DEFAULT_AUTH_CACHE_TTL,
        metavar="DURATION",
        help="how long TokenReview answers are cached (default 10s)",
    )
    secure.add_argument(
        "--authorization-webhook-cache-authorized-ttl",
        type=_ttl,
        default=DEFAULT_AUTH_CACHE_TTL,
        metavar="DURATION",
        help="how long allowed SubjectAccessReview answers are cached (default 10s)",
    )
    secure.add_argument(
        "--authorization-webhook-cache-unauthorized-ttl",
        type=_ttl,
        default=DEFAULT_AUTH_CACHE_TTL,
        metavar="DURATION",
        help="how long denied SubjectAccessReview answers are cached (default 10s)",
    )
    secure.add_argument(
        "--authorization-always-allow-paths",
        type=_paths,
        default=DEFAULT_ALWAYS_ALLOW_PATHS,
        metavar="PATHS",
        help="comma-separated paths served without authorization (default "
        f"{','.join(DEFAULT_ALWAYS_ALLOW_PATHS)})",
    )
    insecure = parser.add_argument_group(
        "insecure serving (development only)",
        "plain HTTP without authentication or authorization, on loopback only; "
        "kube-scheduler has no such port",
    )
    insecure.add_argument(
        "--port",
        type=_port,
        default=0,
        help="plain-HTTP port for /metrics, /configz and the health endpoints; 0 (the "
        "default) serves none",
    )
    insecure.add_argument(
        "--address",
        default=LOOPBACK_ADDRESS,
        metavar="ADDRESS",
        help=f"address of --port; must be a loopback address (default {LOOPBACK_ADDRESS})",
    )
    parser.add_argument(
        "--leader-elect",
        type=_bool,
        nargs="?",
        const=True,
        metavar="true|false",
        default=None,
        help="overrides leaderElection.leaderElect from the config; alone it means true",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="json",
        help="json: one JSON object per line (default); console: human-readable lines",
    )
    parser.add_argument(
        "-v",
        "--v",
        dest="verbosity",
        type=non_negative("verbosity"),
        default=0,
        metavar="LEVEL",
        help=(
            "log verbosity as kube-scheduler's klog -v: 2 adds a line per bound or "
            "unschedulable pod, 4 and above debug (per-pod scheduling detail)"
        ),
    )
    parser.add_argument(
        "--explain-max-pods",
        type=non_negative("pod count"),
        default=DEFAULT_EXPLAIN_MAX_PODS,
        metavar="N",
        help="keep the latest scheduling attempt of at most N pods (least recently attempted "
        "dropped first) for /debug/pysched/explain and `kube-pysched explain`; 0 records "
        f"nothing (default {DEFAULT_EXPLAIN_MAX_PODS})",
    )
    parser.add_argument(
        "--pod-max-in-unschedulable-pods-duration",
        type=_duration,
        default=DEFAULT_MAX_IN_UNSCHEDULABLE,
        metavar="DURATION",
        help="longest a pod stays in the unschedulable pool before a retry (default 5m)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the scheduler and returns the process exit code; --help and --version return 0.
    `kube-pysched explain ...` is the explanation client instead (scheduler.explain.cli);
    `kube-pysched snapshot ...` and `kube-pysched simulate ...` are the simulator's commands
    (scheduler.simulate.cli)."""
    args_given = list(sys.argv[1:] if argv is None else argv)
    if args_given[:1] == ["explain"]:
        from scheduler.explain.cli import main as explain_main

        return explain_main(args_given)
    if args_given[:1] == ["snapshot"]:
        from scheduler.simulate.cli import snapshot_main

        return snapshot_main(args_given[1:])
    if args_given[:1] == ["simulate"]:
        from scheduler.simulate.cli import simulate_main

        return simulate_main(args_given[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # argparse has printed the help, version or usage error
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    if not is_loopback(args.address):
        print(
            f"kube-pysched: --address {args.address} is not a loopback address: the plain-HTTP "
            "--port has no authentication and serves loopback only; use --secure-port",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from scheduler.framework.registry import RegistryError
    from scheduler.plugins.registry import full_registry

    try:
        registry = full_registry()
    except RegistryError as err:
        print(f"kube-pysched: {err}", file=sys.stderr)
        return 1
    try:
        config = load_config(
            args.config, available_plugins=set(registry), features=args.feature_gates
        )
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 1
    options = options_from_args(args, config, flags=flag_values(parser, args))
    configure_logging(options.log_format, options.verbosity)
    from scheduler.cmd.app import run

    return run(options, registry=registry)


def options_from_args(
    args: argparse.Namespace,
    config: KubeSchedulerConfiguration,
    flags: Mapping[str, str] | None = None,
) -> Options:
    """Flags win over the file; the config is updated too so /configz shows what is in effect."""
    if args.kubeconfig:
        config.client_connection.kubeconfig = args.kubeconfig
    if args.leader_elect is not None:
        config.leader_election.leader_elect = args.leader_elect
    return Options(
        config=config,
        master=args.master,
        feature_gates=args.feature_gates,
        secure_serving=SecureServing(
            bind_address=args.bind_address,
            port=args.secure_port,
            cert_file=args.tls_cert_file,
            key_file=args.tls_private_key_file,
            client_ca_file=args.client_ca_file,
            token_cache_ttl=args.authentication_token_webhook_cache_ttl,
            authorized_ttl=args.authorization_webhook_cache_authorized_ttl,
            unauthorized_ttl=args.authorization_webhook_cache_unauthorized_ttl,
            always_allow_paths=args.authorization_always_allow_paths,
        ),
        port=args.port,
        address=args.address,
        log_format=args.log_format,
        verbosity=args.verbosity,
        pod_max_in_unschedulable_pods_duration=args.pod_max_in_unschedulable_pods_duration,
        explain_max_pods=args.explain_max_pods,
        flags=dict(flags or {}),
    )
