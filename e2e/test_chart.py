"""The Helm chart on a real control plane: lint, schema, Pod Security
``restricted``, least-privilege RBAC, release-unique cluster-scoped names, uninstall.

helm is built from its Go module into the cache (e2e.cluster.build.ensure_helm) before the
tests run. The chart's Deployment pods are admitted into a namespace that enforces
``restricted`` and placed by kube-scheduler on a kwok node (kwok fakes running them; nothing
executes the image). kube-pysched itself then runs here as a local process, but as the
release's ServiceAccount (a TokenRequest token) with the KubeSchedulerConfiguration the
release installed, so every API call it makes is checked against the chart's RBAC.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from e2e.cluster import ensure_helm, wait_default_service_account, wait_for
from e2e.cluster.kubeconfig import write_token_kubeconfig
from e2e.cluster.nodes import NodeFactory
from e2e.cluster.pods import is_gone, is_running, wait_for_pod
from e2e.conftest import Cluster
from e2e.helm import DEPLOY_MANIFEST, Helm, HelmError, render_deploy
from e2e.pysched import Pysched
from e2e.test_dynamic_resources import FINALIZER, Resources
from e2e.workload import pod_manifest

pytestmark = pytest.mark.helm

RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
INSTANCE = "app.kubernetes.io/instance"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def helm(tmp_path: Path, cluster: Cluster) -> Helm:
    return Helm(ensure_helm(), tmp_path / "helm-home", cluster.kubeconfig)


@pytest.fixture
def restricted_namespace(core_v1: k8s.CoreV1Api) -> Iterator[Callable[[], str]]:
    """Factory for fresh namespaces enforcing Pod Security ``restricted`` (deleted after)."""
    created: list[str] = []

    def make() -> str:
        name = unique("e2e-chart")
        meta = k8s.V1ObjectMeta(name=name, labels=RESTRICTED)
        core_v1.create_namespace(k8s.V1Namespace(metadata=meta))
        created.append(name)
        wait_default_service_account(core_v1, name)
        return name

    yield make
    for name in created:
        try:
            core_v1.delete_namespace(name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


# --- helm lint, template, schema, deploy/ ------------------------------------------------


def test_lint_and_default_render_is_restricted_and_least_privilege(helm: Helm) -> None:
    out = helm.run("lint", "--strict", str(helm_chart()))
    assert "0 chart(s) failed" in out, out
    docs = render(helm, "rel", "ns1")
    by_kind = {(d["kind"], d["metadata"]["name"]): d for d in docs}

    deploy = by_kind[("Deployment", "rel")]
    assert deploy["spec"]["replicas"] == 2
    pod = deploy["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["readOnlyRootFilesystem"] is True
    assert (sc["runAsUser"], sc["runAsGroup"]) == (65532, 65532)
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "256Mi"}
    assert container["image"] == "kube-pysched:0.1.0"
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]

    pdb = by_kind[("PodDisruptionBudget", "rel")]
    assert pdb["spec"]["minAvailable"] == 1
    assert not any(kind == "NetworkPolicy" for kind, _ in by_kind)

    # Cluster-scoped names carry the release namespace and name.
    assert ("ClusterRole", "kube-pysched:ns1:rel") in by_kind
    binding = by_kind[("ClusterRoleBinding", "kube-pysched:ns1:rel")]
    assert binding["roleRef"]["name"] == "kube-pysched:ns1:rel"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rel", "namespace": "ns1"}]

    # Leases: only the Role in the release namespace, get/update only on the configured name.
    config = yaml.safe_load(by_kind[("ConfigMap", "rel-config")]["data"]["config.yaml"])
    election = config["leaderElection"]
    assert (election["resourceName"], election["resourceNamespace"]) == ("rel", "ns1")
    cluster_rules = by_kind[("ClusterRole", "kube-pysched:ns1:rel")]["rules"]
    assert not any("leases" in r.get("resources", []) for r in cluster_rules)
    role = by_kind[("Role", "rel-leader-election")]
    assert role["metadata"]["namespace"] == "ns1"
    lease_rules = sorted(
        (sorted(r["verbs"]), r.get("resourceNames"))
        for r in role["rules"]
        if "leases" in r.get("resources", [])
    )
    assert lease_rules == [(["create"], None), (["get", "update"], ["rel"])]

    named = render(helm, "rel", "ns1", {"leaderElection": {"resourceName": "my-lease"}})
    roles = [d for d in named if d["kind"] == "Role"]
    assert roles[0]["rules"][1]["resourceNames"] == ["my-lease"]


def test_image_digest_and_network_policy_values(helm: Helm) -> None:
    digest = "sha256:" + "0123456789abcdef" * 4
    docs = render(
        helm,
        "rel",
        "ns1",
        {
            "image": {"repository": "registry.example/kube-pysched", "digest": digest},
            "networkPolicy": {
                "enabled": True,
                "ingressFrom": {
                    "namespaceSelector": {"matchLabels": {"team": "monitoring"}},
                    "podSelector": {"matchLabels": {"app": "prometheus"}},
                },
            },
        },
    )
    (deploy,) = (d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "rel")
    (controller,) = (d for d in docs if d["kind"] == "Deployment" and d is not deploy)
    assert controller["spec"]["template"]["spec"]["containers"][0]["image"] == (
        f"registry.example/kube-pysched@{digest}"
    )
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == (
        f"registry.example/kube-pysched@{digest}"
    )
    (policy,) = (d for d in docs if d["kind"] == "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"][INSTANCE] == "rel"
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 10259}]
    assert rule["from"] == [
        {
            "namespaceSelector": {"matchLabels": {"team": "monitoring"}},
            "podSelector": {"matchLabels": {"app": "prometheus"}},
        }
    ]
    # One replica: no PodDisruptionBudget (minAvailable 1 would block every drain).
    single = render(helm, "rel", "ns1", {"replicas": 1})
    assert not any(d["kind"] == "PodDisruptionBudget" for d in single)
    # The PodGroup controller can be left out entirely.
    without = render(helm, "rel", "ns1", {"controller": {"enabled": False}})
    assert not any("controller" in d["metadata"]["name"] for d in without)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"replicas": "two"}, "at '/replicas': got string, want integer"),
        ({"image": {"digest": "sha256:abc"}}, "at '/image/digest': 'sha256:abc' does not match"),
        ({"replicaCount": 3}, "additional properties 'replicaCount' not allowed"),
        ({"logFormat": "xml"}, "at '/logFormat'"),
        ({"leaderElection": {"leaseDuration": "15"}}, "at '/leaderElection/leaseDuration'"),
        ({"resources": {"requests": {"cpu": "half"}}}, "at '/resources/requests/cpu'"),
        ({"networkPolicy": {"enabled": "yes"}}, "at '/networkPolicy/enabled'"),
        (
            {"leaderElection": {"enabled": False}},
            "replicas=2 needs leaderElection.enabled=true",
        ),
    ],
)
def test_bad_values_are_rejected_with_a_clear_message(
    helm: Helm, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(HelmError) as err:
        helm.template("rel", "ns1", values)
    assert message in err.value.stderr, err.value.stderr


def test_deploy_manifest_is_the_charts_default_render(helm: Helm) -> None:
    """deploy/ is generated (`make deploy-manifests`); it must not drift from the chart."""
    assert DEPLOY_MANIFEST.read_text() == render_deploy(helm), (
        f"{DEPLOY_MANIFEST} is stale: run `make deploy-manifests`"
    )


# --- a real install ----------------------------------------------------------------------


def test_install_in_restricted_namespace_schedules_preempts_leads_and_uninstalls(
    helm: Helm,
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    kwok_nodes: NodeFactory,
    restricted_namespace: Callable[[], str],
    tmp_path: Path,
    cluster: Cluster,
) -> None:
    run = uuid.uuid4().hex[:6]
    # The release's replicas go to a big node; the test's pods to a small tainted one.
    (system_node,) = kwok_nodes(1, labels={"e2e-chart": f"system-{run}"})
    taint = {"key": "e2e-chart", "value": run, "effect": "NoSchedule"}
    (work_node,) = kwok_nodes(1, cpu="1", labels={"e2e-chart": f"work-{run}"}, taints=[taint])
    namespace = restricted_namespace()
    release = "kube-pysched"
    scheduler_name = unique("chart-pysched")

    # The namespace really enforces restricted: a pod without the securityContext is refused.
    with pytest.raises(k8s.ApiException) as refused:
        core_v1.create_namespaced_pod(namespace, pod_manifest("plain", scheduler_name="none"))
    assert refused.value.status == 403 and "violates PodSecurity" in refused.value.body

    helm.install(
        release,
        namespace,
        {
            "schedulerName": scheduler_name,
            "nodeSelector": {"e2e-chart": f"system-{run}"},
        },
    )

    # Admitted: the ReplicaSet creates both pods (no FailedCreate), kube-scheduler places
    # them, kwok runs them.
    apps = k8s.AppsV1Api(api_client)
    selector = f"app.kubernetes.io/name=kube-pysched,{INSTANCE}={release}"

    def replicas_running() -> bool | str:
        failed = failed_create_events(core_v1, namespace)
        assert not failed, f"ReplicaSet FailedCreate: {failed}"
        pods = core_v1.list_namespaced_pod(namespace, label_selector=selector).items
        running = [p for p in pods if is_running(p)]
        return len(running) == 2 or f"{len(running)}/2 running of {len(pods)} pods"

    wait_for(replicas_running, timeout=120, what="the release's 2 replicas running")
    pods = core_v1.list_namespaced_pod(namespace, label_selector=selector).items
    assert {p.spec.node_name for p in pods} == {system_node.metadata.name}
    assert all(p.spec.scheduler_name == "default-scheduler" for p in pods)
    (replica_set,) = apps.list_namespaced_replica_set(namespace, label_selector=selector).items
    assert not failed_create_events(core_v1, namespace)
    assert replica_set.status.replicas == 2

    # kube-pysched as the release's ServiceAccount, with the release's configuration.
    token = core_v1.create_namespaced_service_account_token(
        release,
        namespace,
        k8s.AuthenticationV1TokenRequest(
            spec=k8s.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        ),
    ).status.token
    kubeconfig = write_token_kubeconfig(
        tmp_path / "sa.kubeconfig",
        Path(cluster.kubeconfig),
        token,
        f"system:serviceaccount:{namespace}:{release}",
    )
    config_map = core_v1.read_namespaced_config_map(f"{release}-config", namespace)
    config = yaml.safe_load(config_map.data["config.yaml"])
    assert config["leaderElection"]["leaderElect"] is True
    lease_name = config["leaderElection"]["resourceName"]
    assert config["leaderElection"]["resourceNamespace"] == namespace

    classes = create_priority_classes(api_client, run)
    dra = Resources(api_client)
    proc = Pysched(kubeconfig, config, workdir=tmp_path, name="chart-pysched")
    try:
        proc.start()
        coordination = k8s.CoordinationV1Api(api_client)

        def holder() -> tuple[str, Any]:
            try:
                lease = coordination.read_namespaced_lease(lease_name, namespace)
            except k8s.ApiException as exc:
                if exc.status == 404:
                    return "", None
                raise
            return lease.spec.holder_identity or "", lease.spec.renew_time

        wait_for(lambda: bool(holder()[0]) or "no holder", timeout=60, what="lease taken")
        first_renew = holder()[1]
        wait_for(
            lambda: holder()[1] != first_renew or "not renewed yet",
            timeout=60,
            what="lease renewed (update by resourceName)",
        )

        work = {
            "scheduler_name": scheduler_name,
            "node_selector": {"e2e-chart": f"work-{run}"},
            "tolerations": [{"key": "e2e-chart", "operator": "Equal", "value": run}],
        }
        # Pods in this namespace must pass restricted too.
        first = restricted(pod_manifest("first", cpu="100m", **work))
        core_v1.create_namespaced_pod(namespace, first)
        placed = wait_for_pod(
            core_v1, namespace, "first", is_running, timeout=60, what="first scheduled"
        )
        assert placed is not None and placed.spec.node_name == work_node.metadata.name

        low = restricted(pod_manifest("low", cpu="800m", priority_class=classes["low"], **work))
        core_v1.create_namespaced_pod(namespace, low)
        wait_for_pod(core_v1, namespace, "low", is_running, timeout=60, what="low scheduled")

        high = restricted(pod_manifest("high", cpu="800m", priority_class=classes["high"], **work))
        core_v1.create_namespaced_pod(namespace, high)
        wait_for_pod(core_v1, namespace, "low", is_gone, timeout=60, what="low preempted")
        bound = wait_for_pod(
            core_v1, namespace, "high", is_running, timeout=60, what="high scheduled"
        )
        assert bound is not None and bound.spec.node_name == work_node.metadata.name
        assert core_v1.read_namespaced_pod("first", namespace).spec.node_name == (
            work_node.metadata.name
        )
        place_gpu_pods(core_v1, dra, namespace, work_node.metadata.name, work, run)
    finally:
        proc.stop()
        delete_priority_classes(api_client, classes)
        delete_gpu_driver(dra, run)
    log = proc.log_path.read_text()
    assert "leader" in log.lower(), proc.tail()
    # Paths are dropped first: pytest's numbered temp dirs (".../pytest-403/...") are not errors.
    forbidden = [
        line
        for line in log.splitlines()
        if re.search(r"\b403\b|forbidden", line.replace(str(tmp_path.parent), ""), re.IGNORECASE)
    ]
    assert not forbidden, "\n".join(forbidden[:10])

    helm.uninstall(release, namespace)
    wait_release_gone(api_client, namespace, release)


def test_two_releases_in_two_namespaces_do_not_collide(
    helm: Helm,
    api_client: k8s.ApiClient,
    kwok_node: k8s.V1Node,
    restricted_namespace: Callable[[], str],
) -> None:
    rbac = k8s.RbacAuthorizationV1Api(api_client)
    first, second = restricted_namespace(), restricted_namespace()
    release = "kube-pysched"  # the same release name in both namespaces
    for ns in (first, second):
        helm.install(release, ns, {"schedulerName": unique("pysched")})
    for ns in (first, second):
        # Every cluster-scoped object of the release is named after its namespace and name.
        mine = [
            item.metadata.name
            for lister in (rbac.list_cluster_role, rbac.list_cluster_role_binding)
            for item in lister().items
            if owned(item, ns, release)
        ]
        assert mine and all(n.startswith(f"kube-pysched:{ns}:{release}") for n in mine), mine
        name = f"kube-pysched:{ns}:{release}"
        assert rbac.read_cluster_role(name).metadata.labels[INSTANCE] == release
        binding = rbac.read_cluster_role_binding(name)
        assert binding.role_ref.name == name
        assert [(s.name, s.namespace) for s in binding.subjects] == [(release, ns)]

    helm.uninstall(release, first)
    wait_release_gone(api_client, first, release)
    # The other release's objects are untouched.
    assert rbac.read_cluster_role(f"kube-pysched:{second}:{release}")
    assert k8s.AppsV1Api(api_client).read_namespaced_deployment(release, second)
    helm.uninstall(release, second)
    wait_release_gone(api_client, second, release)


# --- helpers -----------------------------------------------------------------------------


def helm_chart() -> Path:
    from e2e.helm import CHART

    return CHART


def render(
    helm: Helm, release: str, namespace: str, values: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(helm.template(release, namespace, values)) if d]


def restricted(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod that Pod Security ``restricted`` admits."""
    pod["spec"]["securityContext"] = {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    for container in pod["spec"]["containers"]:
        container["securityContext"] = {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        }
    return pod


def failed_create_events(core: k8s.CoreV1Api, namespace: str) -> list[str]:
    events = core.list_namespaced_event(namespace).items
    return [
        f"{e.involved_object.kind}/{e.involved_object.name}: {e.message}"
        for e in events
        if e.reason == "FailedCreate"
    ]


def gpu_driver(run: str) -> str:
    return f"gpu-{run}.chart.example.com"


def place_gpu_pods(
    core_v1: k8s.CoreV1Api,
    dra: Resources,
    namespace: str,
    node_name: str,
    work: dict[str, Any],
    run: str,
) -> None:
    """DynamicResources (on by default) under the chart's RBAC: one pod's GPU through a
    ResourceClaim (the claim's allocation, finalizer and reservation written), another's
    through an extended resource backed by DRA (kube-pysched creates its claim and writes the
    pod's extendedResourceClaimStatus)."""
    driver = gpu_driver(run)
    selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
    resource = f"example.com/gpu-{run}"
    spec = {"selectors": [selector], "extendedResourceName": resource}
    dra.create("deviceclasses", {"metadata": {"name": driver}, "spec": spec})
    pool = {"name": node_name, "generation": 1, "resourceSliceCount": 1}
    slice_spec = {
        "driver": driver,
        "nodeName": node_name,
        "pool": pool,
        "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}],
    }
    dra.create("resourceslices", {"metadata": {"name": driver}, "spec": slice_spec})
    request = {"name": "gpu", "exactly": {"deviceClassName": driver}}
    claim = {"metadata": {"name": "gpu"}, "spec": {"devices": {"requests": [request]}}}
    dra.create("resourceclaims", claim, namespace)
    by_claim = restricted(pod_manifest("gpu-claim", cpu="10m", **work))
    by_claim["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
    by_resource = restricted(
        pod_manifest("gpu-resource", cpu="10m", extra_requests={resource: "1"}, **work)
    )
    for pod in (by_claim, by_resource):
        core_v1.create_namespaced_pod(namespace, pod)
        name = pod["metadata"]["name"]
        bound = wait_for_pod(core_v1, namespace, name, is_running, timeout=60, what=name)
        assert bound is not None and bound.spec.node_name == node_name
    claims = {c["metadata"]["name"]: c for c in dra.list("resourceclaims", namespace)}
    assert len(claims) == 2, sorted(claims)
    devices = set()
    for claim in claims.values():
        assert FINALIZER in claim["metadata"]["finalizers"]
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        devices.add((result["driver"], result["device"]))
        (reserved,) = claim["status"]["reservedFor"]
        assert reserved["resource"] == "pods"
    assert devices == {(driver, "gpu-0"), (driver, "gpu-1")}
    status = core_v1.read_namespaced_pod("gpu-resource", namespace).status
    made = status.extended_resource_claim_status
    assert made is not None and made.resource_claim_name in claims


def delete_gpu_driver(dra: Resources, run: str) -> None:
    driver = gpu_driver(run)
    for plural in ("resourceslices", "deviceclasses"):
        try:
            dra.delete(plural, driver)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


def create_priority_classes(api: k8s.ApiClient, run: str) -> dict[str, str]:
    scheduling = k8s.SchedulingV1Api(api)
    names = {}
    for role, value in (("low", 100), ("high", 1000)):
        name = f"e2e-chart-{run}-{role}"
        scheduling.create_priority_class(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
        names[role] = name
    return names


def delete_priority_classes(api: k8s.ApiClient, names: dict[str, str]) -> None:
    scheduling = k8s.SchedulingV1Api(api)
    for name in names.values():
        try:
            scheduling.delete_priority_class(name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


def wait_release_gone(api: k8s.ApiClient, namespace: str, release: str) -> None:
    def gone() -> bool | str:
        left = release_leftovers(api, namespace, release)
        return not left or f"left: {left}"

    wait_for(gone, timeout=120, what=f"every object of release {namespace}/{release} deleted")


def owned(obj: Any, namespace: str, release: str) -> bool:
    """Whether helm created ``obj`` for release ``namespace/release``."""
    notes = obj.metadata.annotations or {}
    return (
        notes.get("meta.helm.sh/release-namespace"),
        notes.get("meta.helm.sh/release-name"),
    ) == (
        namespace,
        release,
    )


def release_leftovers(api: k8s.ApiClient, namespace: str, release: str) -> str:
    """What of the release still exists ('' when nothing): every kind the chart renders,
    by the release's instance label, and its cluster-scoped objects by name."""
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    rbac, policy = k8s.RbacAuthorizationV1Api(api), k8s.PolicyV1Api(api)
    networking = k8s.NetworkingV1Api(api)
    selector = f"{INSTANCE}={release}"
    listers: dict[str, Callable[..., Any]] = {
        "Deployment": apps.list_namespaced_deployment,
        "ReplicaSet": apps.list_namespaced_replica_set,
        "Pod": core.list_namespaced_pod,
        "Service": core.list_namespaced_service,
        "ConfigMap": core.list_namespaced_config_map,
        "ServiceAccount": core.list_namespaced_service_account,
        "Role": rbac.list_namespaced_role,
        "RoleBinding": rbac.list_namespaced_role_binding,
        "PodDisruptionBudget": policy.list_namespaced_pod_disruption_budget,
        "NetworkPolicy": networking.list_namespaced_network_policy,
    }
    left = [
        f"{kind}/{item.metadata.name}"
        for kind, lister in listers.items()
        for item in lister(namespace, label_selector=selector).items
    ]
    # Cluster-scoped: whatever helm recorded as this release's (its ownership annotations).
    for kind, lister in (
        ("ClusterRole", rbac.list_cluster_role),
        ("ClusterRoleBinding", rbac.list_cluster_role_binding),
    ):
        left += [
            f"{kind}/{item.metadata.name}"
            for item in lister().items
            if owned(item, namespace, release)
        ]
    return ", ".join(left)
