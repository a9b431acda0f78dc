"""VolumeBinding on the local control plane: each scenario run by kube-scheduler (the control
plane's default scheduler) and by kube-pysched on node groups of their own, with the same
outcome: where the pod lands when its volumes decide it, which pods stay Pending and the exact
PodScheduled message, claims Bound by kube-controller-manager's PV controller.

Dynamic provisioning goes through e2e/provisioner.py (a process started by the `provisioner`
fixture), standing in for an external CSI provisioner.

Until kube-pysched registers the storage plugins instead of their guards, only kube-scheduler's
half runs and each test then reports itself skipped (the reason says the kube-pysched half was
not checked). `E2E_STORAGE_ONLY=kube-scheduler` forces that mode. With the plugins merged, plain
`pytest e2e/test_volume_scheduling.py e2e/test_volume_limits.py` runs both halves.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client as k8s

from e2e.cluster import ControlPlane, wait_for
from e2e.cluster.readiness import http_get, tls_context
from e2e.pysched import metric_value
from e2e.test_scheduling import (
    create,
    pods_by_name,
    profile_config,
    unique,
    wait_bound,
    wait_unschedulable,
)
from e2e.volumes import (  # noqa: F401  (the *_fixture names register fixtures)
    HOST,
    NO_PROVISIONER,
    PREFILTER_PASSED,
    PROVISIONER,
    SILENT_PROVISIONER,
    Side,
    Sides,
    Storage,
    TestProvisioner,
    claims_known,
    local,
    provisioner_fixture,
    same_outcome,
    sides_fixture,
    storage_fixture,
)
from e2e.workload import pod_scheduled_condition

SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def pending_message(core: k8s.CoreV1Api, namespace: str, name: str) -> tuple[str, str]:
    cond = wait_unschedulable(core, namespace, name)
    return cond.reason, cond.message


def failed_events(core: k8s.CoreV1Api, namespace: str, pod: str) -> list[tuple[str, int]]:
    """(message, count) of the pod's FailedScheduling events (read as core/v1 Events, which
    show an events.k8s.io series as its count)."""
    resp = core.list_namespaced_event(
        namespace,
        field_selector=f"involvedObject.name={pod},reason=FailedScheduling",
        _preload_content=False,
    )
    return [
        (e.get("message", ""), int(e.get("count") or 1)) for e in json.loads(resp.data)["items"]
    ]


def node_count(core: k8s.CoreV1Api) -> int:
    return len(core.list_node().items)


def pv_node(pv: k8s.V1PersistentVolume) -> str | None:
    """The hostname a PV's required node affinity pins it to, if any."""
    affinity = pv.spec.node_affinity
    if affinity is None or affinity.required is None:
        return None
    for term in affinity.required.node_selector_terms:
        for expr in term.match_expressions or []:
            if expr.key == HOST and expr.operator == "In" and len(expr.values) == 1:
                return str(expr.values[0])
    return None


def test_a_local_static_pv_draws_the_pod_to_its_node_and_the_claim_ends_bound(
    core_v1: k8s.CoreV1Api, namespace: str, sides: Sides, storage: Storage
) -> None:
    """A WaitForFirstConsumer class without provisioner, a 1Gi local PV on node 1 and a 512Mi
    one on node 2: a pod claiming 1Gi can only run on node 1; the scheduler picks the PV, and
    the PV controller completes the binding."""
    runs = sides(3)
    wanted: dict[str, str] = {}
    for side in runs:
        cls = storage.storage_class(NO_PROVISIONER)
        wanted[side.tag] = storage.volume(cls, local(), node=side.nodes[1])
        storage.volume(cls, local(), node=side.nodes[2], size="512Mi")
        storage.claim(side.name("data"), cls)
        create(core_v1, namespace, [side.pod("app", [side.name("data")])])
    outcome = {}
    for side in runs:
        pods = wait_bound(core_v1, namespace, [side.name("app")])
        storage.wait_claims_bound([side.name("data")])
        claim = storage.claims()[side.name("data")]
        outcome[side.tag] = (
            side.nodes.index(pods[side.name("app")].spec.node_name),
            claim.spec.volume_name == wanted[side.tag],
            (claim.metadata.annotations or {}).get(BIND_COMPLETED),
        )
    assert outcome["ref"] == (1, True, "yes"), outcome
    same_outcome(outcome)


def test_dynamic_provisioning_creates_the_pv_on_the_selected_node(
    core_v1: k8s.CoreV1Api,
    namespace: str,
    sides: Sides,
    storage: Storage,
    provisioner: TestProvisioner,
) -> None:
    """A WaitForFirstConsumer class of the test provisioner: the scheduler selects a node for
    the claim, the PV controller hands it to the provisioner, which creates a PV pinned to that
    node; the claim ends Bound and the pod bound to the selected node."""
    runs = sides(2)
    for side in runs:
        cls = storage.storage_class(PROVISIONER)
        storage.claim(side.name("data"), cls)
        create(core_v1, namespace, [side.pod("app", [side.name("data")])])
    outcome = {}
    for side in runs:
        pods = wait_bound(core_v1, namespace, [side.name("app")])
        storage.wait_claims_bound([side.name("data")])
        node = pods[side.name("app")].spec.node_name
        claim = storage.claims()[side.name("data")]
        annotations = claim.metadata.annotations or {}
        pv = core_v1.read_persistent_volume(claim.spec.volume_name)
        outcome[side.tag] = {
            "node in group": node in side.nodes,
            "selected node": annotations.get(SELECTED_NODE) == node,
            "storage-provisioner": annotations.get(STORAGE_PROVISIONER),
            "pv": pv.metadata.name == f"pvc-{claim.metadata.uid}",
            "pv node": pv_node(pv) == node,
            "provisioned-by": (pv.metadata.annotations or {}).get(
                "pv.kubernetes.io/provisioned-by"
            ),
            "pv phase": pv.status.phase,
        }
    assert outcome["ref"] == {
        "node in group": True,
        "selected node": True,
        "storage-provisioner": PROVISIONER,
        "pv": True,
        "pv node": True,
        "provisioned-by": PROVISIONER,
        "pv phase": "Bound",
    }, outcome
    same_outcome(outcome)


def test_an_unbound_immediate_claim_keeps_the_pod_pending(
    core_v1: k8s.CoreV1Api, namespace: str, sides: Sides, storage: Storage
) -> None:
    runs = sides(2)
    for side in runs:
        cls = storage.storage_class(NO_PROVISIONER, mode="Immediate")
        storage.claim(side.name("data"), cls)
        claims_known(core_v1, namespace, side, [side.name("data")], UNBOUND_IMMEDIATE)
        create(core_v1, namespace, [side.pod("app", [side.name("data")])])
    outcome = {side.tag: pending_message(core_v1, namespace, side.name("app")) for side in runs}
    n = node_count(core_v1)
    assert outcome["ref"] == (
        "Unschedulable",
        # The " not found" is kube-scheduler's: DefaultPreemption's PostFilter status when
        # PreFilter rejected the pod (its message is appended to the FitError's).
        f"0/{n} nodes are available: pod has unbound immediate PersistentVolumeClaims. not found",
    ), outcome
    same_outcome(outcome)


def test_a_missing_claim_keeps_the_pod_pending(
    core_v1: k8s.CoreV1Api, namespace: str, sides: Sides
) -> None:
    runs = sides(2)
    for side in runs:
        create(core_v1, namespace, [side.pod("app", ["missing"])])
    outcome = {side.tag: pending_message(core_v1, namespace, side.name("app")) for side in runs}
    n = node_count(core_v1)
    assert outcome["ref"] == (
        "Unschedulable",
        f'0/{n} nodes are available: persistentvolumeclaim "missing" not found. not found',
    ), outcome
    same_outcome(outcome)


def test_a_stateful_set_with_claim_templates_runs_with_bound_claims(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    sides: Sides,
    storage: Storage,
    provisioner: TestProvisioner,
) -> None:
    """Three replicas created in parallel, each with a claim of a WaitForFirstConsumer class
    of the test provisioner: all Running (kwok), each claim Bound to a PV on its pod's node."""
    runs = sides(3)
    apps = k8s.AppsV1Api(api_client)
    for side in runs:
        cls = storage.storage_class(PROVISIONER)
        pod = side.pod("unused", ["data"])
        spec = pod["spec"]
        del spec["volumes"]
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        labels = {"app": side.name("db")}
        apps.create_namespaced_stateful_set(
            namespace,
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": side.name("db")},
                "spec": {
                    "replicas": 3,
                    "serviceName": side.name("db"),
                    "podManagementPolicy": "Parallel",
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": spec},
                    "volumeClaimTemplates": [
                        {
                            "metadata": {"name": "data"},
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "storageClassName": cls,
                                "resources": {"requests": {"storage": "1Gi"}},
                            },
                        }
                    ],
                },
            },
        )
    outcome = {}
    for side in runs:
        names = [side.name(f"db-{i}") for i in range(3)]

        def running(names: list[str] = names) -> bool | str:
            pods = pods_by_name(core_v1, namespace)
            phases = {n: pods[n].status.phase if n in pods else None for n in names}
            return all(p == "Running" for p in phases.values()) or f"phases {phases}"

        wait_for(running, timeout=120, what=f"{side.tag}: the StatefulSet's pods Running")
        claims = [f"data-{n}" for n in names]
        storage.wait_claims_bound(claims)
        pods = pods_by_name(core_v1, namespace)
        by_claim = storage.claims()
        on_own_node = [
            pv_node(core_v1.read_persistent_volume(by_claim[c].spec.volume_name))
            == pods[n].spec.node_name
            for c, n in zip(claims, names, strict=True)
        ]
        outcome[side.tag] = (on_own_node, all(pods[n].spec.node_name in side.nodes for n in names))
    assert outcome["ref"] == ([True, True, True], True), outcome
    same_outcome(outcome)


def test_a_provisioner_that_never_answers_times_out_the_binding_and_is_retried(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    local_control_plane: ControlPlane,
    sides: Sides,
    storage: Storage,
    provisioner: TestProvisioner,
) -> None:
    """VolumeBinding's bindTimeoutSeconds 5 (kube-scheduler's default is 600; the control
    plane's kube-scheduler is shared, so kube-scheduler's half runs in a second kube-scheduler
    with a profile of its own). A claim of the silent provisioner's class is never provisioned:
    PreBind gives up after 5 s, the pod gets a FailedScheduling event naming the timeout and is
    tried again, and an ordinary pod created afterwards is bound."""
    volume_binding = {
        "name": "VolumeBinding",
        "args": {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "VolumeBindingArgs",
            "bindTimeoutSeconds": 5,
        },
    }
    profile: dict[str, Any] = {"pluginConfig": [volume_binding]}
    ref_name = unique("kube-scheduler")
    handle = local_control_plane.start_scheduler(profile_config(ref_name, **profile), name=ref_name)
    try:
        runs = sides(1, profile=profile, ref_scheduler=ref_name)
        for side in runs:
            cls = storage.storage_class(SILENT_PROVISIONER)
            storage.claim(side.name("data"), cls)
            # The notes are compared: none may be a "not found" of a claim not seen yet.
            claims_known(core_v1, namespace, side, [side.name("data")], PREFILTER_PASSED)
            create(core_v1, namespace, [side.pod("app", [side.name("data")])])
        ca = tls_context(local_control_plane.ca_cert)

        def attempts(side: Side) -> float:
            if side.proc is not None:
                text = side.proc.metrics()
            else:
                status, text = http_get(handle.metrics_url, ca)
                assert status == 200, text[:300]
            labels = {"result": "error", "profile": side.scheduler}
            return metric_value(text, "scheduler_schedule_attempts_total", labels) or 0.0

        outcome = {}
        for side in runs:
            app = side.name("app")

            def failed(app: str = app) -> bool | str:
                counts = [count for _, count in failed_events(core_v1, namespace, app)]
                return sum(counts) >= 2 or f"FailedScheduling events x{counts}"

            wait_for(failed, timeout=90, what=f"{side.tag}: two failed attempts of {app}")
            notes = sorted({note for note, _ in failed_events(core_v1, namespace, app)})
            pod = core_v1.read_namespaced_pod(app, namespace)
            cond = pod_scheduled_condition(pod)
            claim = storage.claims()[side.name("data")]
            outcome[side.tag] = {
                "notes": notes,
                "condition": (cond.reason, cond.message) if cond else None,
                "bound": bool(pod.spec.node_name),
                "claim phase": claim.status.phase,
            }
            outcome[side.tag]["attempts > 1"] = attempts(side) >= 2
            create(core_v1, namespace, [side.pod("ordinary")])
            wait_bound(core_v1, namespace, [side.name("ordinary")])
        timed_out = (
            'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
        )
        assert outcome["ref"] == {
            "notes": [timed_out],
            "condition": ("SchedulerError", timed_out),
            "bound": False,
            "claim phase": "Pending",
            "attempts > 1": True,
        }, outcome
        same_outcome(outcome)
    finally:
        handle.stop()
