"""DRA scenarios run by kube-scheduler and by kube-pysched on one control plane, with devices
published by the test DRA driver (python -m e2e.dra.driver, one process for the module).

Each test creates one kwok node per scheduler (both before either scheduler runs, so the
"0/N nodes" counts in the messages are equal), labelled with the driver's profile; the pods
select their side's node. Both sides must bind the same pods, allocate the same devices (pool
names differ: they are the node names) and leave the same messages on the pods that wait.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import ControlPlane, ExternalCluster, ManagedProcess, wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.dra.driver import INSTANCE_LABEL, PROFILE_LABEL
from e2e.dra.inventory import GPU_DRIVER, NIC_DRIVER
from e2e.dra.objects import Resources
from e2e.pysched import REPO_ROOT, Pysched
from e2e.test_scheduling import create, pods_by_name, profile_config, unique, wait_unschedulable
from e2e.workload import pod_manifest

GPU_CLASS = "gpu.e2e.kube-pysched.io"
NIC_CLASS = "nic.e2e.kube-pysched.io"
A100 = {"model": "a100", "memory": "40Gi", "pcieRoot": "pci0", "numaNode": 0}
H100 = {"model": "h100", "memory": "80Gi", "pcieRoot": "pci1", "numaNode": 1}
CONFIG: dict[str, Any] = {
    "profiles": {
        "two-gpus": {"gpus": [A100, H100], "nics": [{"pcieRoot": "pci1"}]},
        "partitionable": {
            "partitionable": [
                {
                    "memory": "40Gi",
                    "compute": 4,
                    "partitions": [{"name": "half", "memory": "20Gi", "compute": 2, "count": 2}],
                }
            ]
        },
    }
}


class TestDriver:
    """The e2e/dra/driver.py process and its configuration file."""

    __test__ = False

    def __init__(self, kubeconfig: Path, workdir: Path) -> None:
        self.config_path = workdir / "driver.json"
        self.config_path.write_text(json.dumps(CONFIG))
        argv = [sys.executable, "-m", "e2e.dra.driver", "--kubeconfig", str(kubeconfig)]
        argv += ["--config", str(self.config_path)]
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        self.process = ManagedProcess(
            "e2e-dra-driver", argv, workdir / "driver.log", env=env, cwd=REPO_ROOT
        )

    def start(self) -> TestDriver:
        self.process.start()
        wait_for(
            lambda: "started:" in self.process.tail(20) or self._alive(),
            timeout=60,
            what="the test DRA driver",
        )
        return self

    def _alive(self) -> str:
        if not self.process.alive():
            raise RuntimeError(f"the test DRA driver exited:\n{self.process.tail(40)}")
        return "not started yet"

    def reconfigure(self, config: dict[str, Any]) -> None:
        """Rewrites the configuration and has the driver re-read it (SIGHUP)."""
        self.config_path.write_text(json.dumps(config))
        os.kill(self.process.pid, signal.SIGHUP)

    def stop(self) -> int | None:
        self.process.stop(15)
        return self.process.returncode


@pytest.fixture(scope="module")
def dra_driver(
    cluster: ControlPlane | ExternalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestDriver]:
    workdir = tmp_path_factory.mktemp("dra-driver")
    proc = TestDriver(cluster.kubeconfig, workdir).start()
    try:
        yield proc
    finally:
        code = proc.stop()
        print(f"----- test DRA driver log -----\n{proc.process.tail(200)}")
        assert code == 0, f"the test DRA driver exited with {code}"
        # It deletes every slice it published when it stops.
        res = Resources(cluster.api_client())
        left = [
            s["metadata"]["name"]
            for s in res.list("resourceslices")
            if INSTANCE_LABEL in s["metadata"].get("labels", {})
        ]
        res.api.api_client.close()
        assert not left, f"slices left behind by the test DRA driver: {left}"


@pytest.fixture(scope="module")
def classes(api_client: k8s.ApiClient) -> Iterator[None]:
    res = Resources(api_client)
    for name, driver in ((GPU_CLASS, GPU_DRIVER), (NIC_CLASS, NIC_DRIVER)):
        selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
        res.create("deviceclasses", {"metadata": {"name": name}, "spec": {"selectors": [selector]}})
    yield
    for name in (GPU_CLASS, NIC_CLASS):
        res.delete("deviceclasses", name)


@pytest.fixture(scope="module")
def pysched_name(
    cluster: ControlPlane | ExternalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    name = unique("pysched")
    proc = Pysched(
        cluster.kubeconfig,
        profile_config(name),
        workdir=tmp_path_factory.mktemp("pysched"),
        name=name,
    )
    proc.start()
    try:
        yield name
    finally:
        proc.stop()


Outcome = tuple[dict[str, list[str]], dict[str, str]]
Setup = Callable[..., None]


def _run(
    core: k8s.CoreV1Api,
    res: Resources,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched_name: str,
    profile: str,
    setup: Setup,
    bound: list[str],
    waiting: list[str],
    prepare: Callable[[list[str]], None] | None = None,
) -> list[Outcome]:
    """Runs `setup` once per scheduler; returns per side the devices of each claim (by claim
    name without the side prefix) and the PodScheduled message of each waiting pod."""
    sides = []
    for scheduler in ("default-scheduler", pysched_name):
        group = unique("g")
        (node,) = kwok_nodes(1, labels={"g": group, PROFILE_LABEL: profile})
        sides.append((scheduler, group, node.metadata.name))
    if prepare is not None:
        prepare([node_name for _, _, node_name in sides])
    for _, _, node_name in sides:
        wait_for(
            lambda n=node_name: any(
                s["spec"].get("nodeName") == n for s in res.list("resourceslices")
            ),
            timeout=60,
            what=f"slices of {node_name}",
        )
    outcomes: list[Outcome] = []
    for scheduler, group, _ in sides:
        prefix = "ks-" if scheduler == "default-scheduler" else "py-"

        def add(plural: str, body: dict[str, Any], prefix: str = prefix) -> None:
            body["metadata"]["name"] = prefix + body["metadata"]["name"]
            res.create(plural, body, namespace)

        def pod(
            name: str,
            prefix: str = prefix,
            scheduler: str = scheduler,
            group: str = group,
            **claims: str,
        ) -> dict[str, Any]:
            body = pod_manifest(prefix + name, scheduler_name=scheduler, node_selector={"g": group})
            body["spec"]["resourceClaims"] = [
                {
                    "name": c,
                    **(
                        {"resourceClaimName": prefix + v[6:]}
                        if v.startswith("claim:")
                        else {"resourceClaimTemplateName": prefix + v[9:]}
                    ),
                }
                for c, v in claims.items()
            ]
            create(core, namespace, [body])
            return body

        def settle(names: list[str], prefix: str = prefix) -> None:
            full = [prefix + n for n in names]
            wait_for(
                lambda: all(
                    (p := pods_by_name(core, namespace).get(n)) is not None and p.spec.node_name
                    for n in full
                ),
                timeout=120,
                what=f"{full} bound",
            )

        setup(add, pod, settle)
        names = [prefix + n for n in bound]
        wait_for(
            lambda names=names: all(
                (p := pods_by_name(core, namespace).get(n)) is not None and p.spec.node_name
                for n in names
            ),
            timeout=120,
            what=f"{names} bound",
        )
        messages = {
            n: wait_unschedulable(core, namespace, prefix + n).message or "" for n in waiting
        }
        devices: dict[str, list[str]] = {}
        for c in res.list("resourceclaims", namespace):
            name = c["metadata"]["name"]
            allocation = (c.get("status") or {}).get("allocation")
            if name.startswith(prefix) and allocation:
                key = name[len(prefix) :]
                # Template claims get generated names: key them by their pod and claim.
                owner = (c["metadata"].get("annotations") or {}).get(
                    "resource.kubernetes.io/pod-claim-name"
                )
                if owner:
                    ref = c["metadata"]["ownerReferences"][0]["name"][len(prefix) :]
                    key = f"{ref}/{owner}"
                devices[key] = sorted(r["device"] for r in allocation["devices"]["results"])
        outcomes.append((devices, messages))
    return outcomes


def _exact(name: str, cls: str = GPU_CLASS, **extra: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, **extra}}


def _claim(name: str, *requests: dict[str, Any], **devices: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"devices": {"requests": list(requests), **devices}},
    }


def _template(name: str, *requests: dict[str, Any], **devices: Any) -> dict[str, Any]:
    claim = _claim(name, *requests, **devices)
    return {"metadata": claim["metadata"], "spec": {"spec": claim["spec"]}}


Env = tuple[k8s.CoreV1Api, Resources, str, NodeFactory, str]


@pytest.fixture
def env(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched_name: str,
    dra_driver: TestDriver,
    classes: None,
) -> Env:
    return core_v1, Resources(api_client), namespace, kwok_nodes, pysched_name


def _same(outcomes: list[Outcome]) -> Outcome:
    (ks, py) = outcomes
    assert py == ks
    return ks


def test_one_gpu_per_pod_from_a_template_third_waits(env: Env) -> None:
    def setup(add: Any, pod: Any, settle: Any) -> None:
        add("resourceclaimtemplates", _template("one-gpu", _exact("gpu")))
        pod("a", gpu="template:one-gpu")
        settle(["a"])  # one at a time: which pod gets which GPU is then unique
        pod("b", gpu="template:one-gpu")
        settle(["b"])
        pod("c", gpu="template:one-gpu")

    devices, messages = _same(_run(*env, "two-gpus", setup, ["a", "b"], ["c"]))
    assert "cannot allocate all claims" in messages["c"]
    assert devices == {"a/gpu": ["gpu-0"], "b/gpu": ["gpu-1"]}


def test_two_pods_share_one_claim_and_an_unsatisfiable_claim_waits(env: Env) -> None:
    def setup(add: Any, pod: Any, settle: Any) -> None:
        add("resourceclaims", _claim("shared", _exact("gpu")))
        add("resourceclaims", _claim("three", _exact("gpu", count=3)))
        pod("a", gpu="claim:shared")
        pod("b", gpu="claim:shared")
        settle(["a", "b"])
        pod("c", gpu="claim:three")

    devices, messages = _same(_run(*env, "two-gpus", setup, ["a", "b"], ["c"]))
    assert devices == {"shared": ["gpu-0"]}
    assert "cannot allocate all claims" in messages["c"]


def test_cel_selector_on_attributes_and_capacity(env: Env) -> None:
    expression = (
        'device.attributes["gpu.e2e.kube-pysched.io"].model == "h100" && '
        'device.capacity["gpu.e2e.kube-pysched.io"].memory.compareTo(quantity("64Gi")) >= 0'
    )
    sel = [{"cel": {"expression": expression}}]

    def setup(add: Any, pod: Any, settle: Any) -> None:
        add("resourceclaims", _claim("big", _exact("gpu", selectors=sel)))
        add("resourceclaims", _claim("big2", _exact("gpu", selectors=sel)))
        pod("a", gpu="claim:big")
        settle(["a"])
        pod("b", gpu="claim:big2")

    devices, messages = _same(_run(*env, "two-gpus", setup, ["a"], ["b"]))
    assert devices == {"big": ["gpu-1"]}
    assert "cannot allocate all claims" in messages["b"]


def test_match_attribute_same_pcie_root_across_gpu_and_nic(env: Env) -> None:
    constraint = [{"requests": ["gpu", "nic"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]

    def setup(add: Any, pod: Any, settle: Any) -> None:
        add(
            "resourceclaims",
            _claim("pair", _exact("gpu"), _exact("nic", NIC_CLASS), constraints=constraint),
        )
        pod("a", dev="claim:pair")

    devices, _ = _same(_run(*env, "two-gpus", setup, ["a"], []))
    assert devices == {"pair": ["gpu-1", "nic-0"]}


def test_first_available_falls_back(env: Env) -> None:
    subs = [
        {
            "name": "b200",
            "deviceClassName": GPU_CLASS,
            "selectors": [
                {
                    "cel": {
                        "expression": 'device.attributes["gpu.e2e.kube-pysched.io"].model == "b200"'
                    }
                }
            ],
        },
        {"name": "any", "deviceClassName": GPU_CLASS, "count": 2},
    ]

    def setup(add: Any, pod: Any, settle: Any) -> None:
        add("resourceclaims", _claim("fallback", {"name": "gpu", "firstAvailable": subs}))
        pod("a", gpu="claim:fallback")

    devices, _ = _same(_run(*env, "two-gpus", setup, ["a"], []))
    assert devices == {"fallback": ["gpu-0", "gpu-1"]}


def test_partitions_exhaust_the_shared_counters(env: Env) -> None:
    half = [
        {"cel": {"expression": 'device.attributes["gpu.e2e.kube-pysched.io"].partition == "half"'}}
    ]

    def setup(add: Any, pod: Any, settle: Any) -> None:
        add("resourceclaimtemplates", _template("half", _exact("gpu", selectors=half)))
        add("resourceclaims", _claim("whole", _exact("gpu")))
        pod("a", gpu="template:half")
        settle(["a"])
        pod("b", gpu="template:half")
        settle(["b"])
        pod("c", gpu="claim:whole")

    devices, messages = _same(_run(*env, "partitionable", setup, ["a", "b"], ["c"]))
    assert devices == {"a/gpu": ["pgpu-0-half-0"], "b/gpu": ["pgpu-0-half-1"]}
    # The two halves took the whole GPU's counters: the whole device cannot be allocated.
    assert "whole" not in devices
    assert "cannot allocate all claims" in messages["c"]


def test_tainted_device_with_and_without_toleration(
    env: Env, dra_driver: TestDriver, api_client: k8s.ApiClient
) -> None:
    taint = {"key": "e2e.kube-pysched.io/unhealthy", "value": "true", "effect": "NoSchedule"}
    res = Resources(api_client)

    def prepare(nodes: list[str]) -> None:
        taints = {f"{n}/gpu-{i}": [taint] for n in nodes for i in (0, 1)}
        dra_driver.reconfigure({**CONFIG, "taints": taints})
        wait_for(
            lambda: (
                sum(
                    1
                    for s in res.list("resourceslices")
                    if s["spec"].get("nodeName") in nodes
                    for d in s["spec"].get("devices", [])
                    if d.get("taints")
                )
                == 4
            ),
            timeout=60,
            what="tainted GPUs published",
        )

    toleration = [{"key": taint["key"], "operator": "Exists", "effect": "NoSchedule"}]

    def setup(add: Any, pod: Any, settle: Any) -> None:
        add("resourceclaims", _claim("tolerant", _exact("gpu", tolerations=toleration)))
        add("resourceclaims", _claim("plain", _exact("gpu")))
        pod("a", gpu="claim:tolerant")
        settle(["a"])
        pod("b", gpu="claim:plain")

    try:
        devices, messages = _same(_run(*env, "two-gpus", setup, ["a"], ["b"], prepare))
    finally:
        dra_driver.reconfigure(CONFIG)
    assert devices == {"tolerant": ["gpu-0"]}
    assert "cannot allocate all claims" in messages["b"]


def test_claim_deleted_while_its_pod_waits(env: Env) -> None:
    """The pod waits on a claim no node satisfies; the claim is deleted and created again
    satisfiable: the pod is retried and bound with the new claim's device."""
    core, res, namespace = env[0], env[1], env[2]

    def setup(add: Any, pod: Any, settle: Any) -> None:
        add("resourceclaims", _claim("later", _exact("gpu", count=3)))
        body = pod("a", gpu="claim:later")
        name = body["metadata"]["name"]
        prefix = name[: -len("a")]
        wait_unschedulable(core, namespace, name)
        res.api.delete_namespaced_custom_object(
            "resource.k8s.io", "v1", namespace, "resourceclaims", prefix + "later"
        )
        wait_for(
            lambda: all(
                c["metadata"]["name"] != prefix + "later"
                for c in res.list("resourceclaims", namespace)
            ),
            timeout=60,
            what="the claim gone",
        )
        add("resourceclaims", _claim("later", _exact("gpu", count=1)))

    devices, _ = _same(_run(*env, "two-gpus", setup, ["a"], []))
    assert devices == {"later": ["gpu-0"]}


def test_admin_access_to_devices_in_use(env: Env) -> None:
    """Both GPUs are allocated; an admin-access claim (in a namespace labelled for it) still
    gets a device, an ordinary claim waits."""
    core, namespace = env[0], env[2]
    label = {"resource.kubernetes.io/admin-access": "true"}
    core.patch_namespace(namespace, {"metadata": {"labels": label}})

    def setup(add: Any, pod: Any, settle: Any) -> None:
        add("resourceclaims", _claim("both", _exact("gpu", count=2)))
        add("resourceclaims", _claim("admin", _exact("gpu", adminAccess=True)))
        add("resourceclaims", _claim("plain", _exact("gpu")))
        pod("a", gpu="claim:both")
        settle(["a"])
        pod("b", gpu="claim:admin")
        settle(["b"])
        pod("c", gpu="claim:plain")

    devices, messages = _same(_run(*env, "two-gpus", setup, ["a", "b"], ["c"]))
    assert devices == {"both": ["gpu-0", "gpu-1"], "admin": ["gpu-0"]}
    assert "cannot allocate all claims" in messages["c"]
