"""`kube-pysched explain POD` and `kubectl pysched explain POD` (the `kubectl-pysched`
executable): asks the running scheduler why a pod is where it is, with the user's own
kubeconfig credentials, and prints the answer.

The scheduler serves each pod's latest attempt on its secure port
(/debug/pysched/explain/{namespace}/{pod}), which authenticates the caller (bearer token
through TokenReview, client certificate against its client CA) and authorizes the path
through a SubjectAccessReview. In a cluster the port is reached through a port-forward to the
scheduler's pod (pods/portforward, the user's credentials again); `--endpoint URL` names the
port directly. The design and why: docs/explain.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import quote

import yaml

from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.client.config import ClientConfig, ConfigError, load_client_config
from scheduler.client.portforward import PortForwardError, forward
from scheduler.client.rest import RestClient
from scheduler.explain.render import render

EXPLAIN_PATH = "/debug/pysched/explain"
DEFAULT_SCHEDULER_NAMESPACE = "kube-system"
DEFAULT_SCHEDULER_SELECTOR = "app.kubernetes.io/name=kube-pysched"
DEFAULT_SCHEDULER_PORT = 10259
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
TIMEOUT = 30.0


class ExplainError(Exception):
    """Something the user must fix or know; printed without a traceback."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="kube-pysched explanations")
    commands = parser.add_subparsers(dest="command", required=True)
    explain = commands.add_parser(
        "explain",
        help="why a pod is Pending, or why it went where it went",
        description=(
            "The pod's latest scheduling attempt as kube-pysched recorded it: the summary "
            "kube-scheduler would write, each node's Filter verdict grouped by reason, the "
            "score table of the best nodes and the preemption story."
        ),
    )
    explain.add_argument("pod", metavar="POD")
    explain.add_argument("-n", "--namespace", help="the pod's namespace (default: the context's)")
    explain.add_argument("--node", help="only this node's verdict and scores")
    explain.add_argument("--wide", action="store_true", help="every node, not examples")
    explain.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    explain.add_argument("--kubeconfig", help="kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
    explain.add_argument("--context", help="the kubeconfig context to use")
    where = explain.add_argument_group("reaching the scheduler")
    where.add_argument(
        "--endpoint",
        metavar="URL",
        help="the scheduler's secure port, e.g. https://127.0.0.1:10259 (default: a "
        "port-forward to the scheduler's pod)",
    )
    where.add_argument(
        "--scheduler-namespace",
        default=DEFAULT_SCHEDULER_NAMESPACE,
        help=f"namespace of the scheduler's pods (default {DEFAULT_SCHEDULER_NAMESPACE})",
    )
    where.add_argument(
        "--scheduler-selector",
        default=DEFAULT_SCHEDULER_SELECTOR,
        help=f"label selector of the scheduler's pods (default {DEFAULT_SCHEDULER_SELECTOR})",
    )
    where.add_argument("--scheduler-port", type=int, default=DEFAULT_SCHEDULER_PORT)
    where.add_argument(
        "--scheduler-ca",
        metavar="PATH",
        help="CA bundle that verifies the scheduler's serving certificate",
    )
    where.add_argument(
        "--scheduler-insecure-skip-tls-verify",
        action="store_true",
        help="do not verify the scheduler's serving certificate (the default through a "
        "port-forward, whose tunnel the API server authenticates)",
    )
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "kube-pysched") -> int:
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    try:
        record = fetch(args)
    except ExplainError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if args.output == "json":
        sys.stdout.write(json.dumps(record, indent=2) + "\n")
    elif args.output == "yaml":
        sys.stdout.write(yaml.safe_dump(record, sort_keys=False))
    else:
        sys.stdout.write(render(record, node=args.node, wide=args.wide))
    return 0


def kubectl_main() -> int:
    """`kubectl pysched ...`: kubectl runs the `kubectl-pysched` executable from PATH."""
    return main(sys.argv[1:], prog="kubectl pysched")


def fetch(args: argparse.Namespace) -> dict[str, Any]:
    """The pod's record from the scheduler, with the user's credentials."""
    try:
        user = load_client_config(args.kubeconfig, context=args.context, qps=-1)
    except ConfigError as err:
        raise ExplainError(f"no usable kubeconfig: {err}") from err
    namespace = args.namespace or _context_namespace(args.kubeconfig, args.context)
    path = f"{EXPLAIN_PATH}/{quote(namespace, safe='')}/{quote(args.pod, safe='')}"
    if args.endpoint:
        verify = not args.scheduler_insecure_skip_tls_verify
        return _get(_scheduler_config(user, args.endpoint, args.scheduler_ca, verify), path)
    pods = _scheduler_pods(user, args.scheduler_namespace, args.scheduler_selector)
    verify = args.scheduler_ca is not None and not args.scheduler_insecure_skip_tls_verify
    missing: ExplainError | None = None
    # A standby replica (leader election) has no records: ask each until one answers.
    for pod in pods:
        try:
            with forward(
                args.scheduler_namespace,
                pod,
                args.scheduler_port,
                kubeconfig=args.kubeconfig,
                context=args.context,
            ) as port:
                url = f"https://127.0.0.1:{port}"
                return _get(_scheduler_config(user, url, args.scheduler_ca, verify), path)
        except PortForwardError as err:
            raise ExplainError(str(err)) from err
        except ExplainError as err:
            if "no scheduling attempt" not in str(err):
                raise
            missing = err
    assert missing is not None
    raise missing


def _scheduler_config(user: ClientConfig, url: str, ca: str | None, verify: bool) -> ClientConfig:
    """The user's credentials (token, client certificate) sent to the scheduler's port."""
    return replace(
        user, server=url.rstrip("/"), ca_file=ca, verify_tls=verify, tls_server_name=None
    )


def _get(config: ClientConfig, path: str) -> dict[str, Any]:
    client = RestClient(config, max_connections=1, timeout=TIMEOUT)
    try:
        body = client.get(path, within=TIMEOUT)
    except ApiError as err:
        if err.status == 404:
            raise ExplainError(err.message or "not found") from err
        if err.status == 403:
            raise ExplainError(
                f"the scheduler refused: {err.message} (RBAC: `get` on the non-resource URL "
                f"{EXPLAIN_PATH}/*)"
            ) from err
        if err.status == 401:
            raise ExplainError(
                "the scheduler could not authenticate these credentials (401): it accepts "
                "bearer tokens it can review and client certificates signed by its client CA"
            ) from err
        raise ExplainError(f"the scheduler answered {err}") from err
    except ApiConnectionError as err:
        raise ExplainError(f"cannot reach the scheduler at {config.server}: {err}") from err
    finally:
        client.close()
    if not isinstance(body, dict):
        raise ExplainError(f"the scheduler answered something else than a record: {body!r}")
    return body


def _scheduler_pods(user: ClientConfig, namespace: str, selector: str) -> list[str]:
    """The running scheduler pods, by name."""
    client = RestClient(user, max_connections=1, timeout=TIMEOUT)
    try:
        listed = client.get(
            f"/api/v1/namespaces/{namespace}/pods",
            {"labelSelector": selector, "fieldSelector": "status.phase=Running"},
            within=TIMEOUT,
        )
    except (ApiError, ApiConnectionError) as err:
        raise ExplainError(
            f"cannot list the scheduler's pods ({selector} in {namespace}): {err}; "
            "name the scheduler with --endpoint, or its pods with --scheduler-namespace and "
            "--scheduler-selector"
        ) from err
    finally:
        client.close()
    names = [str(item["metadata"]["name"]) for item in listed.get("items") or []]
    if not names:
        raise ExplainError(
            f"no running scheduler pod matches {selector} in namespace {namespace}: set "
            "--scheduler-namespace and --scheduler-selector, or --endpoint"
        )
    return sorted(names)


def _context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace of the kubeconfig's (current) context, else "default"."""
    from kubernetes import config as untyped_config

    k8s_config: Any = untyped_config
    try:
        contexts, current = k8s_config.list_kube_config_contexts(config_file=kubeconfig)
    except Exception:
        return "default"
    chosen = (
        next((c for c in contexts if c.get("name") == context), current) if context else current
    )
    return str(((chosen or {}).get("context") or {}).get("namespace") or "default")
