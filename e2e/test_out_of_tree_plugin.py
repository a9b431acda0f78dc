"""The example out-of-tree plugin (examples/node-pool) installed with pip, enabled by a config
file, deciding placements on the cluster (docs/plugins.md).

The distribution is pip-installed into the running venv (editable, no dependencies, no build
isolation, so nothing is downloaded) and uninstalled afterwards unless it was installed
before. kube-pysched finds it only through its `kube_pysched.plugins` entry point.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from e2e.cluster.nodes import NodeFactory
from e2e.pysched import REPO_ROOT
from e2e.test_scheduling import (
    Factory,
    create,
    profile_config,
    unique,
    wait_bound,
    wait_unschedulable,
)
from e2e.workload import pod_manifest

EXAMPLE = REPO_ROOT / "examples" / "node-pool"
DISTRIBUTION = "kube-pysched-node-pool"
POOL = "example.com/pool"
NODE_POOL_ARGS = {
    "labelKey": POOL,
    "preferredPools": ["reserved", "on-demand"],
    "forbiddenPools": ["spot"],
}


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.fixture(scope="module")
def node_pool_installed() -> Iterator[None]:
    """The example distribution installed as a user would install it; removed afterwards."""
    was_installed = _pip("show", "-q", DISTRIBUTION).returncode == 0
    if not was_installed:
        done = _pip("install", "-q", "--no-deps", "--no-build-isolation", "-e", str(EXAMPLE))
        assert done.returncode == 0, f"pip install failed:\n{done.stdout}\n{done.stderr}"
    try:
        yield
    finally:
        if not was_installed:
            removed = _pip("uninstall", "-y", "-q", DISTRIBUTION)
            assert removed.returncode == 0, f"pip uninstall failed:\n{removed.stderr}"


def test_installed_plugin_keeps_pods_off_forbidden_pools_and_fills_the_preferred_pool(
    node_pool_installed: None,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
) -> None:
    with_plugin, without = unique("node-pool"), unique("control")
    group, spot_group = unique("g"), unique("g")
    # Three identical nodes, one per pool: only NodePool tells them apart.
    by_pool = {
        pool: kwok_nodes(1, cpu="8", memory="16Gi", labels={"g": group, POOL: pool})[
            0
        ].metadata.name
        for pool in ("spot", "on-demand", "reserved")
    }
    kwok_nodes(2, cpu="8", memory="16Gi", labels={"g": spot_group, POOL: "spot"})
    config = profile_config(
        with_plugin,
        plugins={"multiPoint": {"enabled": [{"name": "NodePool", "weight": 10}]}},
        pluginConfig=[{"name": "NodePool", "args": NODE_POOL_ARGS}],
    )
    # A control profile in the same process, without the plugin, on the same nodes.
    config["profiles"].append({"schedulerName": without})
    pysched(config)

    placed = [f"placed-{i}" for i in range(6)]
    create(
        core_v1,
        namespace,
        [pod_manifest(n, scheduler_name=with_plugin, node_selector={"g": group}) for n in placed],
    )
    pods = wait_bound(core_v1, namespace, placed)
    # The resource scores alone spread pods over identical nodes; NodePool's weight puts
    # every one of them on the reserved node.
    assert {pods[n].spec.node_name for n in placed} == {by_pool["reserved"]}

    control = [f"control-{i}" for i in range(4)]
    create(
        core_v1,
        namespace,
        [pod_manifest(n, scheduler_name=without, node_selector={"g": group}) for n in control],
    )
    pods = wait_bound(core_v1, namespace, control)
    control_nodes = {pods[n].spec.node_name for n in control}
    assert by_pool["spot"] in control_nodes, "without NodePool the emptier spot node is used"

    # Only spot nodes are selectable: NodePool rejects every one, with its own message.
    create(
        core_v1,
        namespace,
        [pod_manifest("spot-only", scheduler_name=with_plugin, node_selector={"g": spot_group})],
    )
    cond = wait_unschedulable(core_v1, namespace, "spot-only")
    assert cond.reason == "Unschedulable"
    assert "2 node(s) are in a forbidden pool" in cond.message, cond.message
