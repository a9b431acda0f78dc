"""A gang whose members each claim a GPU through a ResourceClaimTemplate (kube-controller-
manager generates each member's claim), scheduled by kube-scheduler v1.37.2 (GangScheduling,
Kubernetes' v1beta1 PodGroups) and by kube-pysched's GangScheduling with DynamicResources on,
on one control plane started with GenericWorkload and the beta API served (as
e2e/test_workload_gang_comparison.py).

Eight members. With eight GPUs (two nodes of four) the gang is placed whole: every member
bound, each claim allocated one GPU of its member's node, no GPU twice. With six GPUs (two
nodes of three) none binds, no claim keeps an allocation, and the members' PodScheduled
messages and the PodGroup's condition are kube-scheduler's.

The PodGroup is created first with a minCount above the members (kube-controller-manager
generates a member's claim only once its PodGroup exists, and GangScheduling holds every
member meanwhile); once every claim exists, minCount is lowered to eight and all members enter
the queue together. Nothing sleeps: everything is polled with a deadline."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import ControlPlane, wait_default_service_account, wait_for
from e2e.cluster.nodes import create_kwok_nodes
from e2e.dra.objects import Resources, node_slice
from e2e.pysched import Pysched, default_config
from e2e.workload import pod_manifest, pod_scheduled_condition

GROUP, VERSION, PLURAL = "scheduling.k8s.io", "v1beta1", "podgroups"
GATES = {"GenericWorkload": True}
RUNTIME_CONFIG = {f"{GROUP}/{VERSION}": "true"}
NODE_LABEL = "e2e.kube-pysched.io/dra-gang"
PYSCHED = "kube-pysched-dra-gang"
KUBE_SCHEDULER = "default-scheduler"
DRIVER = "gpu.dra-gang.example.com"
CONDITION = "PodGroupInitiallyScheduled"
MEMBERS = 8
#: Scenario -> GPUs on each of its two nodes (per scheduler).
SCENARIOS = {"whole": 4, "short": 3}


@dataclass
class Env:
    core: k8s.CoreV1Api
    custom: k8s.CustomObjectsApi
    resources: Resources
    #: (scenario, scheduler) -> its nodes' names
    nodes: dict[tuple[str, str], list[str]]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """The control plane, a DeviceClass for the driver, each (scenario, scheduler) its two
    8-CPU nodes with their GPUs published, kube-pysched running with DynamicResources."""
    with ControlPlane(feature_gates=GATES, runtime_config=RUNTIME_CONFIG) as cp:
        client = cp.api_client()
        core = k8s.CoreV1Api(client)
        resources = Resources(client)
        selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
        resources.create(
            "deviceclasses", {"metadata": {"name": "gpu"}, "spec": {"selectors": [selector]}}
        )
        nodes: dict[tuple[str, str], list[str]] = {}
        for scenario, gpus in SCENARIOS.items():
            for scheduler in (KUBE_SCHEDULER, PYSCHED):
                label = {NODE_LABEL: f"{scenario}-{scheduler}"}
                made = create_kwok_nodes(core, 2, f"{scenario}-{scheduler}-", cpu="8", labels=label)
                names = [n.metadata.name for n in made]
                for name in names:
                    devices = [f"gpu-{i}" for i in range(gpus)]
                    resources.create("resourceslices", node_slice(name, DRIVER, devices))
                nodes[(scenario, scheduler)] = names
        everything = [n for names in nodes.values() for n in names]
        wait_for(
            lambda: all(not core.read_node(n).spec.taints for n in everything) or "tainted",
            timeout=60,
            what="nodes without the not-ready taint",
        )
        config = default_config(profiles=[{"schedulerName": PYSCHED}])
        pysched = Pysched(
            cp.kubeconfig,
            config,
            workdir=Path(tmp_path_factory.mktemp("pysched")),
            extra_args=["--feature-gates=GenericWorkload=true"],
        ).start()
        try:
            yield Env(core, k8s.CustomObjectsApi(client), resources, nodes)
        finally:
            pysched.stop()
            print(f"----- kube-pysched log tail ({pysched.log_path}) -----\n{pysched.tail(60)}")
            client.close()


class Gang:
    """Eight members of PodGroup "train" in a namespace of their own, each claiming a GPU
    through the template "one-gpu", created before the group."""

    def __init__(self, env: Env, scenario: str, scheduler: str) -> None:
        self.env = env
        self.scheduler = scheduler
        self.nodes = env.nodes[(scenario, scheduler)]
        self.namespace = f"dg-{scenario}-{uuid.uuid4().hex[:6]}"
        self.members = [f"m{i}" for i in range(MEMBERS)]
        env.core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=self.namespace)))
        wait_default_service_account(env.core, self.namespace)
        spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
        env.resources.create(
            "resourceclaimtemplates",
            {"metadata": {"name": "one-gpu"}, "spec": {"spec": spec}},
            self.namespace,
        )
        # minCount one above the members: GangScheduling holds each member at PreEnqueue
        # while kube-controller-manager (which needs the PodGroup) generates the claims.
        group = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "PodGroup",
            "metadata": {"name": "train"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": MEMBERS + 1}}},
        }
        env.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, group)
        label = {NODE_LABEL: f"{scenario}-{scheduler}"}
        for name in self.members:
            body = pod_manifest(name, scheduler_name=scheduler, cpu="500m", node_selector=label)
            body["spec"]["schedulingGroup"] = {"podGroupName": "train"}
            body["spec"]["resourceClaims"] = [
                {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
            ]
            env.core.create_namespaced_pod(self.namespace, body)
        wait_for(
            lambda: len(self.claims()) == MEMBERS or f"{len(self.claims())} claims",
            timeout=60,
            what=f"the members' claims generated ({scheduler})",
        )
        # Lowering minCount requeues every member at once (a PodGroup Update).
        patch = {"spec": {"schedulingPolicy": {"gang": {"minCount": MEMBERS}}}}
        env.custom.patch_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, "train", patch
        )

    def claims(self) -> dict[str, dict[str, Any]]:
        """The generated claims by their pod's name."""
        found = {}
        for claim in self.env.resources.list("resourceclaims", self.namespace):
            owners = claim["metadata"].get("ownerReferences") or []
            if owners:
                found[owners[0]["name"]] = claim
        return found

    def read(self, name: str) -> k8s.V1Pod:
        return self.env.core.read_namespaced_pod(name, self.namespace)

    def condition(self) -> dict[str, Any] | None:
        obj = self.env.custom.get_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, "train"
        )
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond["type"] == CONDITION:
                found: dict[str, Any] = cond
                return found
        return None

    def wait_condition(self, status: str) -> dict[str, Any]:
        wait_for(
            lambda: (self.condition() or {}).get("status") == status or f"{self.condition()}",
            timeout=90,
            what=f"{CONDITION}={status} ({self.scheduler})",
        )
        found = self.condition()
        assert found is not None
        return found


def placed_whole(env: Env, scheduler: str) -> dict[str, Any]:
    """Every member bound; (node index, device) of each member's claim."""
    gang = Gang(env, "whole", scheduler)

    def bound() -> bool | str:
        unbound = [n for n in gang.members if not gang.read(n).spec.node_name]
        return not unbound or f"unbound: {unbound}"

    wait_for(bound, timeout=90, what=f"the gang bound by {scheduler}")
    claims = gang.claims()
    devices = []
    for name in gang.members:
        node = gang.read(name).spec.node_name
        claim = claims[name]
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"]) == (DRIVER, node), (name, result)
        (reserved,) = claim["status"]["reservedFor"]
        assert reserved["name"] == name
        devices.append((gang.nodes.index(node), result["device"]))
    cond = gang.wait_condition("True")
    return {
        "devices": sorted(devices),
        "condition": (cond["status"], cond["reason"], cond["message"]),
    }


def placed_none(env: Env, scheduler: str) -> dict[str, Any]:
    """No member bound, no claim allocated; the members' and the group's messages."""
    gang = Gang(env, "short", scheduler)

    def conditions() -> list[tuple[str, str, str]] | str:
        found = []
        for name in gang.members:
            pod = gang.read(name)
            if pod.spec.node_name:
                return f"{name} bound"
            cond = pod_scheduled_condition(pod)
            if cond is None or cond.status != "False":
                return f"{name}: no PodScheduled=False yet"
            found.append((cond.status, cond.reason, cond.message))
        return sorted(found)

    wait_for(
        lambda: isinstance(conditions(), list) or str(conditions()),
        timeout=90,
        what=f"every member unschedulable ({scheduler})",
    )
    cond = gang.wait_condition("False")
    allocated = [n for n, c in gang.claims().items() if (c.get("status") or {}).get("allocation")]
    return {
        "members": conditions(),
        "allocated": allocated,
        "condition": (cond["status"], cond["reason"], cond["message"]),
    }


def test_a_gang_of_eight_claiming_a_gpu_each_is_placed_whole(env: Env) -> None:
    theirs = placed_whole(env, KUBE_SCHEDULER)
    ours = placed_whole(env, PYSCHED)
    print(f"kube-scheduler: {theirs}\nkube-pysched: {ours}")
    every_gpu = sorted((i, f"gpu-{d}") for i in range(2) for d in range(SCENARIOS["whole"]))
    assert theirs["devices"] == ours["devices"] == every_gpu
    assert theirs["condition"] == ours["condition"] == ("True", "Scheduled", "")


def test_a_gang_with_fewer_gpus_than_members_places_none_with_the_same_messages(
    env: Env,
) -> None:
    theirs = placed_none(env, KUBE_SCHEDULER)
    ours = placed_none(env, PYSCHED)
    print(f"kube-scheduler: {theirs}\nkube-pysched: {ours}")
    assert theirs["allocated"] == ours["allocated"] == []
    assert ours["members"] == theirs["members"]
    assert ours["condition"] == theirs["condition"]
    assert theirs["condition"][:2] == ("False", "Unschedulable")
    assert "cannot allocate all claims" in str(theirs["members"])
