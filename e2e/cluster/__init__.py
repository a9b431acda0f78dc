"""A local Kubernetes control plane for e2e tests, built from the pinned upstream releases.

    from e2e.cluster import ControlPlane, create_kwok_node

    with ControlPlane() as cp:                      # builds once, then starts in seconds
        create_kwok_node(cp.kubeconfig, "node-1")
        ...                                          # cp.kubeconfig, cp.server, cp.pids

See docs/testing.md for the layout, ports, certificates and the CLI.
"""

from e2e.cluster.build import (
    BuildError,
    bin_dir_for,
    build,
    cache_root,
    ensure_helm,
    ensure_kwok,
    is_built,
)
from e2e.cluster.controlplane import ControlPlane, ProcessDiedError, SchedulerHandle
from e2e.cluster.e2etest import build_e2e_test, e2e_test_path, is_e2e_test_built
from e2e.cluster.external import ExternalCluster
from e2e.cluster.nodes import (
    create_kwok_node,
    create_kwok_nodes,
    create_node_agents,
    delete_kwok_nodes,
    kwok_node_manifest,
    wait_node_lease,
    wait_nodes_ready,
)
from e2e.cluster.pods import is_gone, is_running, wait_for_pod
from e2e.cluster.processes import ManagedProcess
from e2e.cluster.readiness import NotReadyError, wait_default_service_account, wait_for
from e2e.cluster.versions import KUBERNETES_VERSION, KWOK_VERSION

__all__ = [
    "KUBERNETES_VERSION",
    "KWOK_VERSION",
    "BuildError",
    "ControlPlane",
    "ExternalCluster",
    "ManagedProcess",
    "NotReadyError",
    "ProcessDiedError",
    "SchedulerHandle",
    "bin_dir_for",
    "build",
    "build_e2e_test",
    "cache_root",
    "create_kwok_node",
    "create_kwok_nodes",
    "create_node_agents",
    "delete_kwok_nodes",
    "e2e_test_path",
    "ensure_helm",
    "ensure_kwok",
    "is_built",
    "is_e2e_test_built",
    "is_gone",
    "is_running",
    "kwok_node_manifest",
    "wait_default_service_account",
    "wait_for",
    "wait_for_pod",
    "wait_node_lease",
    "wait_nodes_ready",
]
