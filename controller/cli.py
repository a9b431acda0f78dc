"""`kube-pysched-controller`: flags, preflight checks, then kopf's operator loop.

Exit codes: 0 clean shutdown, 1 the PodGroup API is not served or the API is unreachable,
2 bad command line.

Replicas coordinate with kopf peering: each picks a random priority (unless --priority is
given) and kopf pauses every replica that sees a live peer of higher priority, so exactly one
acts. (Equal priorities would pause all of them: kopf treats that as a conflict.) kopf ties the
peering object's scope to the operator's: a cluster-wide controller uses a ClusterKopfPeering,
one restricted with --namespace a KopfPeering in each namespace it serves. The controller
creates the peering object it needs when absent.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import kopf
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from controller import __version__
from controller.operator import PodGroupController, register
from controller.podgroup import GROUP, PLURAL, VERSION
from scheduler.api.gang import POD_GROUP_LABEL

logger = logging.getLogger("kube_pysched_controller")

DEFAULT_PEERING_NAME = "kube-pysched-controller"
PEERING_GROUP = "kopf.dev"
PEERING_VERSION = "v1"
#: kopf's priorities are compared as integers; a wide range makes two replicas' equal draw
#: (which pauses both until one restarts) practically impossible.
PRIORITY_RANGE = (1, 2**31 - 1)


class KubeApi:
    """The few writes kopf does not make for us, with the official client."""

    def __init__(self, api_client: k8s.ApiClient) -> None:
        self.custom = k8s.CustomObjectsApi(api_client)
        self.core = k8s.CoreV1Api(api_client)

    def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> Any:
        try:
            return self.custom.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                {"status": dict(status)},
                _content_type="application/merge-patch+json",
            )
        except k8s.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def delete_pod(self, namespace: str, name: str, uid: str) -> bool:
        options = k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=uid))
        try:
            self.core.delete_namespaced_pod(name, namespace, body=options)
        except k8s.ApiException as exc:
            # 404: gone already; 409: the name now belongs to another pod (uid precondition).
            if exc.status in (404, 409):
                return False
            raise
        return True

    def podgroups_served(self) -> bool:
        try:
            self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=1)
        except k8s.ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def ensure_peering(self, name: str, namespaces: Sequence[str]) -> None:
        """Creates the peering object(s) kopf will use; present already is fine."""
        targets: list[str | None] = list(namespaces) or [None]
        for namespace in targets:
            kind = "KopfPeering" if namespace else "ClusterKopfPeering"
            body = {
                "apiVersion": f"{PEERING_GROUP}/{PEERING_VERSION}",
                "kind": kind,
                "metadata": {"name": name},
            }
            try:
                if namespace:
                    self.custom.create_namespaced_custom_object(
                        PEERING_GROUP, PEERING_VERSION, namespace, "kopfpeerings", body
                    )
                else:
                    self.custom.create_cluster_custom_object(
                        PEERING_GROUP, PEERING_VERSION, "clusterkopfpeerings", body
                    )
                logger.info("created %s %s", kind, name)
            except k8s.ApiException as exc:
                if exc.status != 409:
                    raise


def api_client(kubeconfig: str | None) -> k8s.ApiClient:
    """--kubeconfig's cluster, else the in-cluster ServiceAccount, else $KUBECONFIG/~/.kube."""
    loader: Any = k8s_config  # untyped
    configuration = k8s.Configuration()
    if kubeconfig:
        loader.load_kube_config(
            config_file=kubeconfig, client_configuration=configuration, persist_config=False
        )
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        loader.load_incluster_config(client_configuration=configuration, try_refresh_token=True)
    else:
        loader.load_kube_config(client_configuration=configuration, persist_config=False)
    return k8s.ApiClient(configuration)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="kube-pysched-controller",
        description="Keeps scheduling.x-k8s.io PodGroups' status (kube-pysched, docs/gang.md).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster)")
    parser.add_argument(
        "--namespace",
        action="append",
        default=[],
        help="serve only this namespace (repeatable; default: all namespaces)",
    )
    parser.add_argument(
        "--peering-name",
        default=DEFAULT_PEERING_NAME,
        help=f"kopf peering object's name (default {DEFAULT_PEERING_NAME})",
    )
    parser.add_argument(
        "--priority",
        type=int,
        default=None,
        help="kopf peering priority (default: random, so one replica acts)",
    )
    parser.add_argument(
        "--standalone", action="store_true", help="no peering (a single replica only)"
    )
    parser.add_argument("--liveness-address", default="0.0.0.0")
    parser.add_argument("--liveness-port", type=int, default=8080, help="kopf's /healthz (0: off)")
    parser.add_argument("--metrics-address", default="0.0.0.0")
    parser.add_argument("--metrics-port", type=int, default=8081, help="/metrics (0: off)")
    parser.add_argument("--log-format", choices=("json", "console"), default="console")
    parser.add_argument("--verbose", action="store_true", help="debug logging")
    return parser.parse_args(argv)


def settings_for(args: argparse.Namespace) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    # Only member pods are watched (server-side), not every pod of the cluster.
    settings.watching.label_selectors["v1", "pods"] = POD_GROUP_LABEL
    # No watch on CRDs (no RBAC for it): the preflight check requires the PodGroup CRD, and a
    # CRD installed later is picked up by the restart that check's failure causes.
    settings.scanning.disabled = True
    settings.peering.stealth = True
    settings.posting.reporting_component = "kube-pysched-controller"
    settings.posting.event_name_prefix = "kube-pysched-controller-"
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    kopf.configure(
        verbose=args.verbose,
        log_format=kopf.LogFormat.JSON if args.log_format == "json" else kopf.LogFormat.FULL,
    )
    if not args.verbose:
        # kopf logs every handler call and aiohttp every probe at INFO: keep our own lines.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        api = KubeApi(api_client(args.kubeconfig))
        if not api.podgroups_served():
            logger.error(
                "%s/%s %s is not served: install the PodGroup CRD (charts/kube-pysched/crds)",
                GROUP,
                VERSION,
                PLURAL,
            )
            return 1
        if not args.standalone:
            api.ensure_peering(args.peering_name, args.namespace)
    except (k8s.ApiException, k8s_config.ConfigException, OSError) as exc:
        logger.error("cannot reach the API server: %s", exc)
        return 1

    if args.kubeconfig:
        # kopf's own kubeconfig login reads $KUBECONFIG.
        os.environ["KUBECONFIG"] = args.kubeconfig
    controller = PodGroupController(api)
    registry = kopf.OperatorRegistry()
    register(registry, controller)

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        if args.kubeconfig:
            return kopf.login_with_kubeconfig(**kwargs)
        return kopf.login_via_client(**kwargs)

    if args.metrics_port:
        controller.metrics.serve(args.metrics_port, args.metrics_address)
    priority = args.priority if args.priority is not None else random.randint(*PRIORITY_RANGE)
    liveness = (
        f"http://{args.liveness_address}:{args.liveness_port}/healthz"
        if args.liveness_port
        else None
    )
    logger.info(
        "kube-pysched-controller %s: peering %s, priority %d",
        __version__,
        "off" if args.standalone else args.peering_name,
        priority,
    )
    kopf.run(
        registry=registry,
        settings=settings_for(args),
        clusterwide=not args.namespace,
        namespaces=args.namespace,
        standalone=args.standalone,
        priority=priority,
        peering_name=None if args.standalone else args.peering_name,
        liveness_endpoint=liveness,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
