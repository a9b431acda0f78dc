"""The local control plane with feature gates (docs/gang.md "The APIs users already have").

Started with `GenericWorkload=true` and `--runtime-config=scheduling.k8s.io/v1beta1=true` it
serves Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1) and keeps a pod's
`spec.schedulingGroup` (dropped by the API server with the gate off).

Its own control plane (not the session's): the gates are process flags. Short: create, read
back, nothing scheduled.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from e2e.cluster import ControlPlane

GROUP, VERSION, PLURAL = "scheduling.k8s.io", "v1beta1", "podgroups"
GATES = {"GenericWorkload": True}
RUNTIME_CONFIG = {f"{GROUP}/{VERSION}": "true"}


def _create_namespace(core: k8s.CoreV1Api, name: str) -> None:
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))


def test_a_control_plane_with_generic_workload_serves_v1beta1_podgroups() -> None:
    with ControlPlane(feature_gates=GATES, runtime_config=RUNTIME_CONFIG) as cp:
        apiserver = cp.processes["kube-apiserver"].argv
        assert "--feature-gates=GenericWorkload=true" in apiserver
        assert "--runtime-config=scheduling.k8s.io/v1beta1=true" in apiserver
        for name in ("kube-controller-manager", "kube-scheduler"):
            assert "--feature-gates=GenericWorkload=true" in cp.processes[name].argv, name
        client = cp.api_client()
        try:
            resources = k8s.CustomObjectsApi(client).get_api_resources(GROUP, VERSION)
            served = {r.name for r in resources.resources}
            assert {"podgroups", "podgroups/status", "workloads"} <= served, served

            core = k8s.CoreV1Api(client)
            _create_namespace(core, "workload-api")
            custom = k8s.CustomObjectsApi(client)
            body: dict[str, Any] = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "PodGroup",
                "metadata": {"name": "gang"},
                "spec": {
                    "schedulingPolicy": {"gang": {"minCount": 3}},
                    "disruptionMode": {"all": {}},
                },
            }
            custom.create_namespaced_custom_object(GROUP, VERSION, "workload-api", PLURAL, body)
            got = custom.get_namespaced_custom_object(
                GROUP, VERSION, "workload-api", PLURAL, "gang"
            )
            assert got["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
            assert got["spec"]["disruptionMode"] == {"all": {}}
            listed = custom.list_namespaced_custom_object(GROUP, VERSION, "workload-api", PLURAL)
            assert [item["metadata"]["name"] for item in listed["items"]] == ["gang"]

            # A member pod keeps its spec.schedulingGroup (the API server drops it with the
            # gate off).
            pod = k8s.V1Pod(
                metadata=k8s.V1ObjectMeta(name="member"),
                spec=k8s.V1PodSpec(
                    scheduler_name="nobody",
                    scheduling_group=k8s.V1PodSchedulingGroup(pod_group_name="gang"),
                    containers=[k8s.V1Container(name="app", image="registry.k8s.io/pause:3.10")],
                ),
            )
            created = core.create_namespaced_pod("workload-api", pod)
            assert created.spec.scheduling_group.pod_group_name == "gang"
        finally:
            client.close()
