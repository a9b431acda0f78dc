"""kube-pysched-controller (controller/, docs/gang.md "The controller") on the local control
plane: a PodGroup walks Pending -> Scheduling -> Running -> Finished with the right counts and
one event per transition, a finished group's pending unbound member is released, and of two
peered replicas only the higher-priority one acts until it stops.

The CRDs come from the chart (charts/kube-pysched/crds/). Pods are bound directly with
spec.nodeName to a kwok node (kwok makes them Running); no scheduler is involved.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.podgroups import (
    CRDS,
    GROUP,
    LABEL,
    PLURAL,
    PODGROUP_CRD,
    VERSION,
    Controller,
    apply_crds,
    controllers_fixture,  # noqa: F401 (the `controllers` fixture)
)
from e2e.workload import pod_manifest

PEERING_CRDS = CRDS / "kopf.dev_peerings.yaml"


@pytest.fixture(scope="module")
def crds(api_client: k8s.ApiClient) -> bool:
    """Installs the peering and PodGroup CRDs; True if the PodGroup CRD has status.scheduled."""
    apply_crds(api_client, PEERING_CRDS)
    apply_crds(api_client, PODGROUP_CRD)
    crd = k8s.ApiextensionsV1Api(api_client).read_custom_resource_definition(f"{PLURAL}.{GROUP}")
    version = next(v for v in crd.spec.versions if v.name == VERSION)
    status_schema = version.schema.open_apiv3_schema.properties["status"]
    return "scheduled" in (status_schema.properties or {})


def test_podgroup_status_release_and_peering(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    controllers: Callable[..., Controller],
    crds: bool,
) -> None:
    assert crds, "the chart's PodGroup CRD declares status.scheduled"
    custom = k8s.CustomObjectsApi(api_client)
    (node,) = kwok_nodes(1)
    peering = f"e2e-pg-{uuid.uuid4().hex[:6]}"
    try:
        leader = controllers("controller-a", "--peering-name", peering, "--priority", "200")
        follower = controllers("controller-b", "--peering-name", peering, "--priority", "100")

        # Both keep-alives in the peering object: the follower, paused from its start
        # (peering is mandatory), has seen the higher-priority leader and stays paused.
        def peers() -> bool | str:
            try:
                obj = custom.get_cluster_custom_object(
                    "kopf.dev", "v1", "clusterkopfpeerings", peering
                )
            except k8s.ApiException as exc:
                if exc.status == 404:
                    return "no peering object yet"
                raise
            live = obj.get("status") or {}
            return len(live) == 2 or f"peers: {sorted(live)}"

        wait_for(peers, timeout=30, what="both replicas in the peering object")

        def group(name: str) -> dict[str, Any]:
            return custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)

        def status_is(name: str, **want: Any) -> Callable[[], bool | str]:
            def check() -> bool | str:
                status = group(name).get("status") or {}
                got = {k: status.get(k) for k in want}
                return got == want or f"status {status}"

            return check

        def create_group(name: str, min_member: int) -> None:
            body = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "PodGroup",
                "metadata": {"name": name},
                "spec": {"minMember": min_member},
            }
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)

        create_group("gang", 3)
        wait_for(status_is("gang", phase="Pending"), timeout=20, what="gang Pending")

        # Three members bound directly (kwok runs them), one more that nothing will bind.
        owner = core_v1.create_namespaced_config_map(
            namespace, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="gang-owner"))
        )
        owner_ref = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "gang-owner",
            "uid": owner.metadata.uid,
        }
        for i in range(3):
            pod = pod_manifest(f"member-{i}", scheduler_name="e2e-nobody", labels={LABEL: "gang"})
            pod["spec"]["nodeName"] = node.metadata.name
            pod["metadata"]["ownerReferences"] = [owner_ref]
            core_v1.create_namespaced_pod(namespace, pod)
        extra = pod_manifest("member-extra", scheduler_name="e2e-nobody", labels={LABEL: "gang"})
        core_v1.create_namespaced_pod(namespace, extra)

        running: dict[str, Any] = {"phase": "Running", "running": 3, "succeeded": 0, "scheduled": 3}
        wait_for(status_is("gang", **running), timeout=30, what="gang Running, 3 running")
        status = group("gang")["status"]
        assert status["occupiedBy"] == f"{namespace}/gang-owner"
        assert status["scheduleStartTime"]

        def reasons() -> list[str]:
            events = core_v1.list_namespaced_event(
                namespace, field_selector="involvedObject.kind=PodGroup,involvedObject.name=gang"
            ).items
            events.sort(key=lambda e: e.event_time or e.first_timestamp)
            return [e.reason for e in events]

        wait_for(
            lambda: reasons()[:3] == ["Pending", "Scheduling", "Running"] or str(reasons()),
            timeout=20,
            what="one event per transition",
        )
        # Peering: only the higher-priority replica acted.
        assert leader.reconciles() > 0
        assert follower.reconciles() == 0

        # The members succeed: the group finishes and releases its pending unbound member.
        for i in range(3):
            core_v1.patch_namespaced_pod_status(
                f"member-{i}", namespace, {"status": {"phase": "Succeeded"}}
            )
        wait_for(
            status_is("gang", phase="Finished", succeeded=3, running=0),
            timeout=30,
            what="gang Finished",
        )

        def extra_gone() -> bool | str:
            names = {p.metadata.name for p in core_v1.list_namespaced_pod(namespace).items}
            return "member-extra" not in names or f"pods: {sorted(names)}"

        wait_for(extra_gone, timeout=20, what="the pending unbound member released")
        wait_for(
            lambda: "Released" in reasons() or str(reasons()),
            timeout=20,
            what="Released event",
        )
        released = core_v1.list_namespaced_event(
            namespace, field_selector="involvedObject.name=gang,reason=Released"
        ).items
        assert released[0].message.startswith("Released 1 pending unbound member(s)")
        assert {p.metadata.name for p in core_v1.list_namespaced_pod(namespace).items} == {
            "member-0",
            "member-1",
            "member-2",
        }

        # The leader stops (and leaves the peering): the other replica takes over.
        leader.stop()
        create_group("after", 1)
        wait_for(status_is("after", phase="Pending"), timeout=30, what="takeover")
        assert follower.reconciles() > 0
        assert "Resuming operations" in follower.log()
    finally:
        try:
            custom.delete_cluster_custom_object("kopf.dev", "v1", "clusterkopfpeerings", peering)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
