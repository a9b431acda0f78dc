"""deploy/kube-pysched.yaml (the Helm chart's default render, checked in), checked without helm.

Pod Security `restricted`, high-availability defaults, least-privilege RBAC, release-unique
cluster-scoped names and the shipped CRDs. e2e/test_chart.py checks that the file equals the
chart's render and installs the chart on a real control plane."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scheduler.config.load import parse_config_text
from scheduler.plugins.registry import in_tree_registry

DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "kube-pysched.yaml"


def _objects() -> dict[tuple[str, str], dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(DEPLOY.read_text()) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def test_pods_meet_pod_security_restricted() -> None:
    deploy = _objects()[("Deployment", "kube-pysched")]
    pod = deploy["spec"]["template"]["spec"]
    pod_sc = pod["securityContext"]
    assert pod_sc["runAsNonRoot"] is True
    assert (pod_sc["runAsUser"], pod_sc["runAsGroup"]) == (65532, 65532)
    assert pod_sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    for container in pod["containers"]:
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["runAsNonRoot"] is True
        assert container["resources"]["requests"]["cpu"]
        assert container["resources"]["requests"]["memory"]
        assert not any("hostPort" in p for p in container.get("ports", []))
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert set(volumes) == {"config", "tmp"}
    assert "emptyDir" in volumes["tmp"]


def test_high_availability_defaults() -> None:
    objects = _objects()
    assert objects[("Deployment", "kube-pysched")]["spec"]["replicas"] == 2
    pdb = objects[("PodDisruptionBudget", "kube-pysched")]
    assert pdb["spec"]["minAvailable"] == 1
    config = _config(objects)
    assert config.leader_election.leader_elect is True


def test_lease_permissions_are_limited_to_the_configured_lease() -> None:
    objects = _objects()
    config = _config(objects)
    election = config.leader_election
    assert election.resource_namespace == "kube-system"
    rules = [
        (rule, kind)
        for (kind, _), obj in objects.items()
        if kind in ("Role", "ClusterRole")
        for rule in obj["rules"]
        if "leases" in rule.get("resources", [])
    ]
    assert all(kind == "Role" for _, kind in rules), "no ClusterRole may grant leases"
    (role,) = (o for (k, _), o in objects.items() if k == "Role")
    assert role["metadata"]["namespace"] == election.resource_namespace
    by_verbs = {tuple(sorted(r["verbs"])): r.get("resourceNames") for r, _ in rules}
    assert by_verbs == {("create",): None, ("get", "update"): [election.resource_name]}


def test_cluster_scoped_names_carry_namespace_and_release() -> None:
    """ClusterRoles and ClusterRoleBindings are shared by every release: each name must carry
    the release namespace and name (kube-pysched:<namespace>:<release>[:<what>])."""
    names = {name for (kind, name) in _objects() if kind.startswith("Cluster")}
    assert "kube-pysched:kube-system:kube-pysched" in names
    prefix = "kube-pysched:kube-system:kube-pysched"
    assert all(n == prefix or n.startswith(prefix + ":") for n in names), names


def _config(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
    text = objects[("ConfigMap", "kube-pysched-config")]["data"]["config.yaml"]
    return parse_config_text(text, set(in_tree_registry()), source=str(DEPLOY))


# --- kube-pysched-controller (templates/controller.yaml) ------------------------------------


def test_controller_deployment_is_restricted_single_replica_with_its_command() -> None:
    objects = _objects()
    deploy = objects[("Deployment", "kube-pysched-controller")]
    scheduler = objects[("Deployment", "kube-pysched")]
    assert deploy["spec"]["replicas"] == 1
    pod = deploy["spec"]["template"]["spec"]
    assert pod["securityContext"] == scheduler["spec"]["template"]["spec"]["securityContext"]
    assert pod["serviceAccountName"] == "kube-pysched-controller"
    (container,) = pod["containers"]
    (scheduler_container,) = scheduler["spec"]["template"]["spec"]["containers"]
    assert container["securityContext"] == scheduler_container["securityContext"]
    assert container["image"] == scheduler_container["image"]
    assert container["command"] == ["kube-pysched-controller"]
    assert "--peering-name=kube-system.kube-pysched-controller" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "healthz"}
    # Its own name label: the scheduler's selectors (Service, PDB) never match its pods.
    labels = deploy["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "kube-pysched-controller"
    for kind, name in (
        ("Service", "kube-pysched-metrics"),
        ("PodDisruptionBudget", "kube-pysched"),
    ):
        selector = objects[(kind, name)]["spec"]["selector"]
        selector = selector.get("matchLabels", selector)
        assert not all(labels.get(k) == v for k, v in selector.items()), kind


def test_controller_rbac_is_least_privilege() -> None:
    role = _objects()[("ClusterRole", "kube-pysched:kube-system:kube-pysched:controller")]
    grants = {
        (group, resource, tuple(rule.get("resourceNames") or ())): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    peering = ("kube-system.kube-pysched-controller",)
    assert grants == {
        ("scheduling.x-k8s.io", "podgroups", ()): {"get", "list", "watch"},
        ("scheduling.x-k8s.io", "podgroups/status", ()): {"patch"},
        ("", "pods", ()): {"get", "list", "watch", "delete"},
        ("", "events", ()): {"create", "patch"},
        ("kopf.dev", "clusterkopfpeerings", ()): {"list", "watch", "create"},
        ("kopf.dev", "clusterkopfpeerings", peering): {"get", "patch"},
    }
    binding = _objects()[("ClusterRoleBinding", "kube-pysched:kube-system:kube-pysched:controller")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kube-pysched-controller", "namespace": "kube-system"}
    ]


def test_the_scheduler_reads_podgroups_of_both_apis() -> None:
    """Coscheduling's scheduling.x-k8s.io PodGroups and, with GenericWorkload, Kubernetes'
    scheduling.k8s.io ones: get/list/watch, and for the latter's PodGroupInitiallyScheduled
    condition patch/update on podgroups/status; no more."""
    role = _objects()[("ClusterRole", "kube-pysched:kube-system:kube-pysched")]
    grants = {
        (group, resource): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        if group.startswith("scheduling.")
    }
    assert grants == {
        ("scheduling.x-k8s.io", "podgroups"): {"get", "list", "watch"},
        ("scheduling.k8s.io", "podgroups"): {"get", "list", "watch"},
        ("scheduling.k8s.io", "podgroups/status"): {"patch", "update"},
    }


def test_peering_crds_are_shipped() -> None:
    crds = {name for (kind, name) in _objects() if kind == "CustomResourceDefinition"}
    assert {"clusterkopfpeerings.kopf.dev", "kopfpeerings.kopf.dev"} <= crds
