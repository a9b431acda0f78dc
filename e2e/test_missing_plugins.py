"""Pods kube-pysched cannot check wait, on the local control plane: with DynamicResources
switched off (--feature-gates=PyschedDynamicResources=false) a pod with a resource claim stays
Pending with PodScheduled=False naming the plugin and the switch, and a pod whose
PersistentVolumeClaim does not exist stays Pending with the storage plugins' message, while
other pods keep being scheduled; a configuration that enables a plugin this build does not have
is refused at start.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from kubernetes import client as k8s

from e2e.cluster import ControlPlane, ExternalCluster, wait_for
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

SWITCHED_OFF = (
    "the pod uses resource claims, which the DynamicResources plugin checks; it is switched off "
    "in this kube-pysched (--feature-gates=PyschedDynamicResources=false)"
)


def test_pods_needing_a_switched_off_plugin_wait_with_its_name_while_others_are_scheduled(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
) -> None:
    name = unique("pysched")
    group = unique("g")
    kwok_nodes(2, cpu="4", memory="8Gi", labels={"g": group})
    pysched(profile_config(name), extra_args=["--feature-gates=PyschedDynamicResources=false"])

    def pod(pod_name: str) -> dict[str, object]:
        return pod_manifest(pod_name, scheduler_name=name, node_selector={"g": group})

    with_claim = pod("with-pvc")
    with_claim["spec"]["volumes"] = [  # type: ignore[index]
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    ]
    with_resource_claim = pod("with-resource-claim")
    with_resource_claim["spec"]["resourceClaims"] = [  # type: ignore[index]
        {"name": "gpu", "resourceClaimName": "gpu"}
    ]
    create(core_v1, namespace, [with_claim, with_resource_claim])
    pvc = wait_unschedulable(core_v1, namespace, "with-pvc")
    claim = wait_unschedulable(core_v1, namespace, "with-resource-claim")
    assert pvc.reason == claim.reason == "Unschedulable"
    # VolumeRestrictions (no longer a guard) reads the claim's access modes first.
    assert 'persistentvolumeclaim "data" not found' in pvc.message, pvc.message
    assert SWITCHED_OFF in claim.message, claim.message

    others = [pod(f"plain-{i}") for i in range(5)]
    create(core_v1, namespace, others)
    wait_bound(core_v1, namespace, [str(p["metadata"]["name"]) for p in others])  # type: ignore[index]

    events = k8s.EventsV1Api(api_client)

    def failed_events() -> bool | str:
        names = {
            e.regarding.name
            for e in events.list_namespaced_event(namespace).items
            if e.reason == "FailedScheduling"
        }
        return {"with-pvc", "with-resource-claim"} <= names or f"FailedScheduling for {names}"

    wait_for(failed_events, timeout=30, what="FailedScheduling events of the guarded pods")
    for guarded in ("with-pvc", "with-resource-claim"):
        assert not core_v1.read_namespaced_pod(guarded, namespace).spec.node_name


def test_a_config_enabling_a_plugin_this_build_lacks_exits_1_with_one_line(
    cluster: ControlPlane | ExternalCluster, tmp_path: Path
) -> None:
    config = profile_config("mine", plugins={"filter": {"enabled": [{"name": "FancyPlugin"}]}})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scheduler",
            "--config",
            str(path),
            "--kubeconfig",
            str(cluster.kubeconfig),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f'{path}: profiles[0].plugins.filter: Invalid value: "FancyPlugin": no plugin of this '
        "name in this build of kube-pysched (profile 'mine')"
    ]
