"""Shared pieces of the storage e2e tests (test_volume_scheduling.py, test_volume_limits.py).

Each scenario is run by kube-scheduler and by kube-pysched on node groups of their own (a
`Side` each), as in test_pod_topology_spread.py. Until kube-pysched registers the storage
plugins (VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits) instead of their
guards, or when E2E_STORAGE_ONLY=kube-scheduler is set, only kube-scheduler's side runs and
checks its expectations, and the test then reports itself skipped naming the reason: the
kube-pysched half was not checked.

Storage objects are cluster-scoped (StorageClasses, PVs, CSINodes): the `storage` fixture
names them uniquely and deletes them after the test, together with every PV bound to a claim
of the test's namespace (the test provisioner's PVs).
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.bench.schedulers import pysched_missing_plugins
from e2e.cluster import ControlPlane, ExternalCluster, ManagedProcess, wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.pysched import REPO_ROOT, Pysched
from e2e.test_pod_topology_spread import prime
from e2e.test_scheduling import Factory, pods_by_name, profile_config, unique
from e2e.workload import pod_manifest, pod_scheduled_condition

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REF = "default-scheduler"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
PROVISIONER = "e2e.kube-pysched.io/provisioner"
SILENT_PROVISIONER = "e2e.kube-pysched.io/silent"
CSI_DRIVER = "e2e.csi.kube-pysched.io"
STORAGE_PLUGINS = ("VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits")
ONLY_ENV = "E2E_STORAGE_ONLY"


def pysched_skip_reason() -> str | None:
    """Why kube-pysched's half is not run, or None when it is."""
    only = os.environ.get(ONLY_ENV, "")
    if only == "kube-scheduler":
        return f"{ONLY_ENV}=kube-scheduler: the kube-pysched half was not run"
    if only:
        raise ValueError(f"{ONLY_ENV}={only!r}: only 'kube-scheduler' (or unset) is known")
    missing = [p for p in STORAGE_PLUGINS if p in pysched_missing_plugins()]
    if missing:
        return (
            f"kube-pysched registers only guards for {', '.join(missing)}: the kube-pysched "
            "half was not run (the kube-scheduler half passed)"
        )
    return None


class Side:
    """One scheduler's half of a scenario: its schedulerName and node group."""

    def __init__(self, tag: str, scheduler: str) -> None:
        self.tag = tag  # "ref" (kube-scheduler) or "ours" (kube-pysched)
        self.scheduler = scheduler
        self.group = unique("g")
        self.nodes: list[str] = []
        self.proc: Pysched | None = None  # kube-pysched's side: its process

    def name(self, name: str) -> str:
        return f"{self.tag}-{name}"

    def pod(
        self, name: str, claims: Sequence[str] = (), on: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        """A pod of this side using `claims`; `on` pins it to a node by hostname."""
        selector = {HOST: on} if on is not None else {"g": self.group}
        body = pod_manifest(
            self.name(name), scheduler_name=self.scheduler, node_selector=selector, **kw
        )
        if claims:
            body["spec"]["volumes"] = [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                for i, c in enumerate(claims)
            ]
        return body


Sides = Callable[..., list[Side]]


@pytest.fixture(name="sides")
def sides_fixture(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, pysched: Factory
) -> Sides:
    """Factory `sides(count, labels=[...], profile={...}, ref_scheduler=...)`: kube-scheduler's
    side and, unless `pysched_skip_reason()`, kube-pysched's, each with `count` Ready nodes of
    its own (`labels[i]` on node i), known to its scheduler (see test_pod_topology_spread's
    `prime`). kube-pysched is started with a profile of its own (`profile` are extra profile
    fields, e.g. pluginConfig); `ref_scheduler` replaces kube-scheduler's schedulerName (a
    second kube-scheduler started by the test)."""

    def make(
        count: int,
        labels: Sequence[dict[str, str]] = (),
        profile: dict[str, Any] | None = None,
        ref_scheduler: str = REF,
        before_nodes: Callable[[list[str]], None] | None = None,
    ) -> list[Side]:
        made = [Side("ref", ref_scheduler)]
        if pysched_skip_reason() is None:
            name = unique("pysched")
            ours = Side("ours", name)
            ours.proc = pysched(profile_config(name, **(profile or {})))
            made.append(ours)
        for side in made:
            # kwok_nodes names a node f"{prefix}{index}", here index 0 of a one-node call.
            side.nodes = [f"{side.group}-{i}-0" for i in range(count)]
            if before_nodes is not None:
                before_nodes(side.nodes)
            for i in range(count):
                extra = labels[i] if i < len(labels) else {}
                kwok_nodes(1, prefix=f"{side.group}-{i}-", labels={"g": side.group, **extra})
            prime(core_v1, namespace, side, side.nodes, [])  # type: ignore[arg-type]
        return made

    return make


#: A probe's message once VolumeBinding's PreFilter has passed (claims and class known, the
#: claims WaitForFirstConsumer): only the probe's node selector stops it.
PREFILTER_PASSED = "didn't match Pod's node affinity/selector"


def claims_known(
    core: k8s.CoreV1Api, namespace: str, side: Side, claims: Sequence[str], ready: str
) -> None:
    """Returns once the side's scheduler has seen `claims` (and their class) in its informers.

    Claims and pods come through separate watches, so a pod created right after its claim may
    reach the scheduler first, which then reports `persistentvolumeclaim "x" not found` (both
    schedulers do; a class not seen yet reads as Immediate binding). A probe pod using the
    claims, with a node selector no node matches, is tried until its PodScheduled message
    contains `ready` (PREFILTER_PASSED for WaitForFirstConsumer claims); the probe is deleted
    before the test's own pod, so that pod comes later on the pods watch. The probe never
    passes Filter, so no node is selected and nothing is provisioned for it."""
    probe = side.pod("claims-probe", claims)
    probe["spec"]["nodeSelector"] = {"g": unique("nowhere")}
    name = probe["metadata"]["name"]
    core.create_namespaced_pod(namespace, probe)

    def tried() -> bool | str:
        cond = pod_scheduled_condition(core.read_namespaced_pod(name, namespace))
        message = (cond.message or "") if cond is not None else ""
        return ready in message or f"{name}: {message!r}"

    wait_for(tried, timeout=60, what=f"{side.tag}: the scheduler knows {list(claims)}")
    core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

    def gone() -> bool | str:
        return name not in pods_by_name(core, namespace) or f"{name} still present"

    wait_for(gone, timeout=60, what=f"{side.tag}: claims probe deleted")


def same_outcome(outcome: dict[str, Any]) -> None:
    """kube-pysched's outcome equals kube-scheduler's, or the test says it was not checked."""
    if "ours" not in outcome:
        pytest.skip(pysched_skip_reason() or "the kube-pysched half was not run")
    assert outcome["ours"] == outcome["ref"], outcome


class Storage:
    """Cluster-scoped storage objects of one test, created with unique names."""

    def __init__(self, api_client: k8s.ApiClient, namespace: str) -> None:
        self.core = k8s.CoreV1Api(api_client)
        self.storage_api = k8s.StorageV1Api(api_client)
        self.namespace = namespace
        self.classes: list[str] = []
        self.volumes: list[str] = []
        self.csinodes: list[str] = []

    def storage_class(self, provisioner: str, mode: str = "WaitForFirstConsumer") -> str:
        name = unique("e2e-sc")
        self.storage_api.create_storage_class(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name},
                "provisioner": provisioner,
                "volumeBindingMode": mode,
                "reclaimPolicy": "Delete",
            }
        )
        self.classes.append(name)
        return name

    def claim(
        self,
        name: str,
        storage_class: str,
        *,
        size: str = "1Gi",
        access_modes: Sequence[str] = ("ReadWriteOnce",),
        volume_name: str | None = None,
    ) -> None:
        spec: dict[str, Any] = {
            "accessModes": list(access_modes),
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}},
        }
        if volume_name:
            spec["volumeName"] = volume_name
        self.core.create_namespaced_persistent_volume_claim(
            self.namespace,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name},
                "spec": spec,
            },
        )

    def volume(
        self,
        storage_class: str,
        source: dict[str, Any],
        *,
        node: str | None = None,
        labels: dict[str, str] | None = None,
        claim: str | None = None,
        size: str = "1Gi",
        access_modes: Sequence[str] = ("ReadWriteOnce",),
    ) -> str:
        """A PV (named uniquely); `node` pins it by hostname, `claim` pre-binds it."""
        name = unique("e2e-pv")
        spec: dict[str, Any] = {
            "capacity": {"storage": size},
            "accessModes": list(access_modes),
            "storageClassName": storage_class,
            "persistentVolumeReclaimPolicy": "Retain",
            **source,
        }
        if node is not None:
            term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": [node]}]}
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
        if claim is not None:
            spec["claimRef"] = {"namespace": self.namespace, "name": claim}
        self.core.create_persistent_volume(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name, "labels": dict(labels or {})},
                "spec": spec,
            }
        )
        self.volumes.append(name)
        return name

    def prebound(
        self,
        claim: str,
        storage_class: str,
        source: dict[str, Any],
        *,
        labels: dict[str, str] | None = None,
        access_modes: Sequence[str] = ("ReadWriteOnce",),
    ) -> str:
        """A PV and a claim naming each other; returns the PV's name once the PV controller
        has completed the binding (the claim Bound)."""
        pv = self.volume(
            storage_class, source, labels=labels, claim=claim, access_modes=access_modes
        )
        self.claim(claim, storage_class, access_modes=access_modes, volume_name=pv)
        self.wait_claims_bound([claim])
        return pv

    def csinode(self, node: str, driver: str, count: int) -> None:
        """A CSINode as a CSI node plugin registering `driver` with an attach limit would."""
        self.storage_api.create_csi_node(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": node},
                "spec": {
                    "drivers": [{"name": driver, "nodeID": node, "allocatable": {"count": count}}]
                },
            }
        )
        self.csinodes.append(node)

    def claims(self) -> dict[str, k8s.V1PersistentVolumeClaim]:
        items = self.core.list_namespaced_persistent_volume_claim(self.namespace).items
        return {c.metadata.name: c for c in items}

    def wait_claims_bound(self, names: Sequence[str], timeout: float = 60.0) -> None:
        def check() -> bool | str:
            claims = self.claims()
            phases = {n: claims[n].status.phase if n in claims else None for n in names}
            waiting = {n: p for n, p in phases.items() if p != "Bound"}
            return not waiting or f"not Bound: {waiting}"

        wait_for(check, timeout=timeout, what=f"claims {list(names)} Bound")

    def cleanup(self) -> None:
        ours = {
            pv.metadata.name
            for pv in self.core.list_persistent_volume().items
            if pv.spec.claim_ref is not None and pv.spec.claim_ref.namespace == self.namespace
        }
        deletes: list[tuple[Callable[[str], Any], list[str]]] = [
            (self.core.delete_persistent_volume, sorted(set(self.volumes) | ours)),
            (self.storage_api.delete_csi_node, self.csinodes),
            (self.storage_api.delete_storage_class, self.classes),
        ]
        for delete, names in deletes:
            for name in names:
                try:
                    delete(name)
                except k8s.ApiException as exc:
                    if exc.status != 404:
                        raise


@pytest.fixture(name="storage")
def storage_fixture(api_client: k8s.ApiClient, namespace: str) -> Iterator[Storage]:
    """The test's storage objects; PVs are deleted here, and go once the namespace's claims
    are gone (pv-protection keeps a Bound PV until then)."""
    made = Storage(api_client, namespace)
    try:
        yield made
    finally:
        made.cleanup()


class TestProvisioner:
    """The e2e/provisioner.py process."""

    __test__ = False  # not a pytest test class

    def __init__(self, kubeconfig: Path, log_path: Path) -> None:
        argv = [
            sys.executable,
            "-m",
            "e2e.provisioner",
            "--kubeconfig",
            str(kubeconfig),
            "--name",
            PROVISIONER,
            "--silent-name",
            SILENT_PROVISIONER,
        ]
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        self.process = ManagedProcess("e2e-provisioner", argv, log_path, env=env, cwd=REPO_ROOT)

    def start(self) -> TestProvisioner:
        self.process.start()
        wait_for(
            lambda: "started:" in self.process.tail(20) or self.alive_or_raise(),
            timeout=60,
            what="the test provisioner",
        )
        return self

    def alive_or_raise(self) -> str:
        if not self.process.alive():
            raise RuntimeError(f"the test provisioner exited:\n{self.process.tail(40)}")
        return "not started yet"

    def stop(self) -> int | None:
        self.process.stop(15)
        return self.process.returncode


@pytest.fixture(name="provisioner", scope="module")
def provisioner_fixture(
    cluster: ControlPlane | ExternalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestProvisioner]:
    """The test provisioner for the module's tests; it must exit 0 on SIGTERM."""
    log_path = tmp_path_factory.mktemp("provisioner") / "provisioner.log"
    proc = TestProvisioner(cluster.kubeconfig, log_path).start()
    try:
        yield proc
    finally:
        code = proc.stop()
        print(f"----- test provisioner log ({log_path}) -----\n{proc.process.tail(200)}")
        assert code == 0, f"the test provisioner exited with {code}"


def csi(handle: str | None = None, driver: str = CSI_DRIVER) -> dict[str, Any]:
    return {"csi": {"driver": driver, "volumeHandle": handle or uuid.uuid4().hex}}


def local(path: str = "/mnt/e2e") -> dict[str, Any]:
    return {"local": {"path": path}}
