"""`kubectl pysched explain` against the real control plane: a real kubectl runs the
`kubectl-pysched` executable from PATH, which reads kube-pysched's record of a pod's latest
attempt from its secure port with the user's own credentials.

A pod is Pending for five reasons at once (too little cpu, an untolerated taint, a node
selector no other node matches, a bound volume pinned to another node, a spreading constraint
its volume's node would break); the explanation's summary is the PodScheduled condition
kube-pysched wrote, and its counts per reason are the condition message's. A pod that fits is
explained with the node it was bound to at the top of the score table. A ServiceAccount token
user and a client-certificate user (issued through the CSR API) allowed by RBAC get the answer;
a token user without the RBAC and an anonymous caller are refused (403).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client as k8s

from e2e import preemption_scenarios as sc
from e2e.cluster import ControlPlane, ExternalCluster, wait_for
from e2e.cluster.kubeconfig import service_account_token, write_token_kubeconfig
from e2e.cluster.nodes import NodeFactory
from e2e.cluster.pods import wait_for_pod
from e2e.cluster.readiness import NotReadyError
from e2e.pysched import Pysched, default_config
from e2e.volumes import NO_PROVISIONER, Storage, local, storage_fixture  # noqa: F401 (fixture)
from e2e.workload import pod_manifest, pod_scheduled_condition

SCHEDULER_NAME = "explain"
EXPLAIN_URLS = "/debug/pysched/explain/*"
TAINT = {"key": "explain-e2e", "value": "reserved", "effect": "NoSchedule"}
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
RACK = "explain-e2e/rack"
SPREAD = {"explain-e2e/app": "spread"}


def _identity(cluster: ControlPlane | ExternalCluster) -> Path:
    """system:kube-scheduler on the local control plane (it may create TokenReviews and
    SubjectAccessReviews without system:masters); the suite's kubeconfig elsewhere."""
    if isinstance(cluster, ControlPlane):
        return cluster.scheduler_kubeconfig
    return Path(cluster.kubeconfig)


def _start(cluster: ControlPlane | ExternalCluster, pysched: Callable[..., Pysched]) -> Pysched:
    """kube-pysched with its secure port, trusting the cluster's client CA (certificate users,
    the admin kubeconfig among them)."""
    if not isinstance(cluster, ControlPlane):
        pytest.skip("needs the local control plane's client CA for certificate users")
    return pysched(
        default_config(profiles=[{"schedulerName": SCHEDULER_NAME}]),
        kubeconfig=_identity(cluster),
        secure=True,
        extra_args=["--client-ca-file", str(cluster.ca_cert)],
    )


def _kubectl(cluster: ControlPlane | ExternalCluster) -> str:
    if isinstance(cluster, ControlPlane):
        return str(cluster.bin_dir / "kubectl")
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("no kubectl on PATH for this cluster")
    return found


def _cluster_entry(base: Path) -> dict[str, Any]:
    source = yaml.safe_load(base.read_text())
    current = source["current-context"]
    context = next(c["context"] for c in source["contexts"] if c["name"] == current)
    cluster: dict[str, Any] = next(c for c in source["clusters"] if c["name"] == context["cluster"])
    return cluster


def _kubeconfig(path: Path, base: Path, user: dict[str, Any]) -> Path:
    cluster = _cluster_entry(base)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "u", "context": {"cluster": cluster["name"], "user": "u"}}],
        "current-context": "u",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


@pytest.fixture
def csr_user(api_client: k8s.ApiClient) -> Iterator[Callable[[str, Path, Path], Path]]:
    """Issues a client certificate for a user through the CSR API (kube-controller-manager
    signs it with the cluster CA) and writes a kubeconfig with it."""
    certificates = k8s.CertificatesV1Api(api_client)
    made: list[str] = []

    def issue(user: str, base: Path, path: Path) -> Path:
        key = ec.generate_private_key(ec.SECP256R1())
        request = (
            x509.CertificateSigningRequestBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user)]))
            .sign(key, hashes.SHA256())
        )
        name = f"explain-e2e-{uuid.uuid4().hex[:8]}"
        pem = request.public_bytes(serialization.Encoding.PEM)
        certificates.create_certificate_signing_request(
            k8s.V1CertificateSigningRequest(
                metadata=k8s.V1ObjectMeta(name=name),
                spec=k8s.V1CertificateSigningRequestSpec(
                    request=base64.b64encode(pem).decode(),
                    signer_name=CLIENT_SIGNER,
                    usages=["client auth"],
                    expiration_seconds=600,
                ),
            )
        )
        made.append(name)
        csr = certificates.read_certificate_signing_request(name)
        csr.status.conditions = [
            k8s.V1CertificateSigningRequestCondition(
                type="Approved", status="True", reason="E2E", message="explain e2e user"
            )
        ]
        certificates.replace_certificate_signing_request_approval(name, csr)
        issued: dict[str, str] = {}

        def signed() -> bool:
            cert = certificates.read_certificate_signing_request(name).status.certificate
            if cert:
                issued["cert"] = cert
            return bool(cert)

        wait_for(signed, timeout=60, what=f"CSR {name} signed")
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        user_entry = {
            "client-certificate-data": issued["cert"],
            "client-key-data": base64.b64encode(key_pem).decode(),
        }
        return _kubeconfig(path, base, user_entry)

    yield issue
    for name in made:
        certificates.delete_certificate_signing_request(name)


@pytest.fixture
def explain_role(api_client: k8s.ApiClient) -> Iterator[Callable[[k8s.RbacV1Subject], None]]:
    """A ClusterRole allowing `get` on the explain path; the factory binds a subject to it."""
    rbac = k8s.RbacAuthorizationV1Api(api_client)
    role = rbac.create_cluster_role(
        k8s.V1ClusterRole(
            metadata=k8s.V1ObjectMeta(name=f"kube-pysched-explain-e2e-{uuid.uuid4().hex[:6]}"),
            rules=[k8s.V1PolicyRule(non_resource_urls=[EXPLAIN_URLS], verbs=["get"])],
        )
    )
    bindings: list[str] = []

    def bind(subject: k8s.RbacV1Subject) -> None:
        binding = rbac.create_cluster_role_binding(
            k8s.V1ClusterRoleBinding(
                metadata=k8s.V1ObjectMeta(name=f"{role.metadata.name}-{len(bindings)}"),
                role_ref=k8s.V1RoleRef(
                    api_group="rbac.authorization.k8s.io",
                    kind="ClusterRole",
                    name=role.metadata.name,
                ),
                subjects=[subject],
            )
        )
        bindings.append(binding.metadata.name)

    yield bind
    for name in bindings:
        rbac.delete_cluster_role_binding(name)
    rbac.delete_cluster_role(role.metadata.name)


def _counts(message: str) -> Counter[str]:
    """kube-scheduler's "0/N nodes are available: 3 Insufficient cpu, 2 ..." per reason."""
    head = message.split(" preemption: ", maxsplit=1)[0]
    listed = head.split("nodes are available: ", 1)[1].rstrip(".")
    return Counter({m[2]: int(m[1]) for m in re.finditer(r"(\d+) ([^,]+)(?:, |$)", listed)})


def test_kubectl_pysched_explain_for_token_and_certificate_users(
    cluster: ControlPlane | ExternalCluster,
    pysched: Callable[..., Pysched],
    core_v1: k8s.CoreV1Api,
    kwok_nodes: NodeFactory,
    namespace: str,
    explain_role: Callable[[k8s.RbacV1Subject], None],
    csr_user: Callable[[str, Path, Path], Path],
    storage: Storage,
    tmp_path: Path,
) -> None:
    proc = _start(cluster, pysched)
    pool = {"explain-e2e/pool": namespace}
    small = [kwok_nodes(1, cpu=cpu, labels=pool)[0].metadata.name for cpu in ("2", "2500m")]
    tainted = kwok_nodes(1, cpu="32", labels=pool, taints=[TAINT])[0].metadata.name
    elsewhere = kwok_nodes(1, cpu="32")[0].metadata.name
    near = kwok_nodes(1, cpu="32", labels={**pool, RACK: "r1"})[0].metadata.name
    far = kwok_nodes(1, cpu="32", labels={**pool, RACK: "r2"})[0].metadata.name

    # The claim's volume lives on `near`, where a pod of the spread group already runs: `far`
    # fails VolumeBinding, `near` fails PodTopologySpread (r1 would hold 2, r2 none).
    volume_class = storage.storage_class(NO_PROVISIONER, "Immediate")
    volume = storage.volume(volume_class, local(), node=near, claim="data")
    storage.claim("data", volume_class, volume_name=volume)
    storage.wait_claims_bound(["data"])
    placed = pod_manifest("spread-peer", scheduler_name=SCHEDULER_NAME, labels=SPREAD)
    placed["spec"]["nodeName"] = near
    core_v1.create_namespaced_pod(namespace, placed)

    def create(name: str, cpu: str) -> None:
        body = pod_manifest(name, scheduler_name=SCHEDULER_NAME, cpu=cpu, node_selector=pool)
        core_v1.create_namespaced_pod(namespace, body)

    stuck_body = pod_manifest(
        "stuck", scheduler_name=SCHEDULER_NAME, cpu="3", node_selector=pool, labels=SPREAD
    )
    stuck_body["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    ]
    stuck_body["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": RACK,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": SPREAD},
        }
    ]
    core_v1.create_namespaced_pod(namespace, stuck_body)
    create("fits", "1")
    every_reason = ("PersistentVolume's node affinity", "pod topology spread constraints")
    seen: list[str] = []

    def five_reasons(pod: k8s.V1Pod | None) -> bool:
        condition = pod_scheduled_condition(pod) if pod is not None else None
        if condition is None or condition.reason != "Unschedulable":
            return False
        seen.append(condition.message or "")
        return all(reason in seen[-1] for reason in every_reason)

    try:
        stuck = wait_for_pod(core_v1, namespace, "stuck", five_reasons, what="five reasons")
    except NotReadyError as exc:
        raise AssertionError(f"last PodScheduled message: {seen[-1:]}") from exc
    assert stuck is not None
    condition_message = pod_scheduled_condition(stuck).message
    fits = wait_for_pod(core_v1, namespace, "fits", lambda p: bool(p.spec.node_name))
    assert fits is not None

    # Users: a token one and a certificate one with the RBAC, a token one without.
    cert_user = f"explain-e2e-{uuid.uuid4().hex[:6]}"
    explain_role(k8s.RbacV1Subject(kind="ServiceAccount", name="reader", namespace=namespace))
    explain_role(
        k8s.RbacV1Subject(kind="User", name=cert_user, api_group="rbac.authorization.k8s.io")
    )
    admin = Path(cluster.kubeconfig)
    users = {u: service_account_token(core_v1, namespace, u) for u in ("reader", "stranger")}
    token_config = write_token_kubeconfig(tmp_path / "token", admin, users["reader"], "reader")
    stranger = write_token_kubeconfig(tmp_path / "stranger", admin, users["stranger"], "stranger")
    cert_config = csr_user(cert_user, admin, tmp_path / "cert")
    anonymous = _kubeconfig(tmp_path / "anonymous", admin, {})

    kubectl = _kubectl(cluster)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

    def explain(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [kubectl, "pysched", "explain", *args, "-n", namespace]
        argv += ["--endpoint", proc.secure_url, "--scheduler-insecure-skip-tls-verify"]
        env = {**os.environ, "PATH": path, "KUBECONFIG": str(config)}
        return subprocess.run(
            argv, check=False, env=env, capture_output=True, text=True, timeout=120
        )

    # (1) The token user: the record as JSON; its counts are the condition's.
    done = explain(token_config, "stuck", "-o", "json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["message"] == condition_message
    statuses = record["filter"]["statuses"]
    by_reason: Counter[str] = Counter()
    for group in record["filter"]["groups"]:
        for reason in statuses[group["status"]]["reasons"]:
            by_reason[reason] += group["nodes"]
    assert by_reason == _counts(condition_message)
    verdict = {node: statuses[i]["plugin"] for node, i in record["filter"]["nodes"].items()}
    assert [verdict[n] for n in small] == ["NodeResourcesFit", "NodeResourcesFit"]
    assert verdict[tainted] == "TaintToleration"
    assert verdict[elsewhere] == "NodeAffinity"
    assert verdict[far] == "VolumeBinding"
    assert verdict[near] == "PodTopologySpread"

    # (2) The certificate user: the text view, summary and groups.
    done = explain(cert_config, "stuck")
    assert done.returncode == 0, done.stderr
    assert f"Summary:   {condition_message}\n" in done.stdout
    assert re.search(r"^  2 +NodeResourcesFit +\S+ +Insufficient cpu ", done.stdout, re.M)
    done = explain(cert_config, "stuck", "--node", tainted)
    assert f"Node {tainted}: rejected by TaintToleration" in done.stdout, done.stdout

    # (3) The scheduled pod: the bound node, at the top of the score table when unique.
    done = explain(token_config, "fits", "-o", "json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["outcome"] == "Scheduled"
    assert record["selectedNode"] == fits.spec.node_name
    score = record["score"]
    if score["bestTotalNodes"] == 1:
        assert score["nodes"][0]["node"] == fits.spec.node_name

    # (4) Refusals: a user without the RBAC, and no credentials at all.
    for config, user in (
        (stranger, f"system:serviceaccount:{namespace}:stranger"),
        (anonymous, "system:anonymous"),
    ):
        done = explain(config, "stuck")
        assert done.returncode == 1
        assert "the scheduler refused" in done.stderr, done.stderr
        assert f'User "{user}" cannot get path' in done.stderr, done.stderr


def test_a_preemptors_explanation_names_the_evicted_victims(
    cluster: ControlPlane | ExternalCluster,
    pysched: Callable[..., Pysched],
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    kwok_nodes: NodeFactory,
    namespace: str,
) -> None:
    """The preemptor's attempt that placed it keeps the preemption before it: the nominated
    node (where the pod went) and the victims, which are the pods that were evicted."""
    proc = _start(cluster, pysched)
    pool = {"explain-e2e/pool": namespace}
    node = kwok_nodes(1, cpu="2", labels=pool)[0].metadata.name
    classes = sc.create_priority_classes(api_client, (1, 1000))
    try:

        def create(name: str, priority: int) -> None:
            body = pod_manifest(
                name,
                scheduler_name=SCHEDULER_NAME,
                cpu="1500m",
                node_selector=pool,
                priority_class=classes[priority],
            )
            core_v1.create_namespaced_pod(namespace, body)

        create("low", 1)
        assert wait_for_pod(core_v1, namespace, "low", lambda p: bool(p.spec.node_name))
        create("high", 1000)
        assert wait_for_pod(core_v1, namespace, "low", lambda p: p is None, what="eviction") is None
        high = wait_for_pod(core_v1, namespace, "high", lambda p: bool(p.spec.node_name))
        assert high is not None and high.spec.node_name == node
    finally:
        sc.delete_priority_classes(api_client, classes)

    kubectl = _kubectl(cluster)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    argv = [kubectl, "pysched", "explain", "high", "-n", namespace, "--endpoint"]
    argv += [proc.secure_url, "--scheduler-insecure-skip-tls-verify"]
    env = {**os.environ, "PATH": path, "KUBECONFIG": str(cluster.kubeconfig)}
    done = subprocess.run(argv, check=False, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"nominated {node}, victims: {namespace}/low" in done.stdout, done.stdout
    record = json.loads(
        subprocess.run(
            [*argv, "-o", "json"], check=False, env=env, capture_output=True, text=True, timeout=120
        ).stdout
    )
    assert record["outcome"] == "Scheduled" and record["selectedNode"] == node
    assert record["earlierPreemption"]["victims"] == [f"{namespace}/low"]
    assert record["earlierPreemption"]["nominatedNode"] == node
    assert record["triedFirst"] == {"as": "nominated node", "node": node, "fit": True}
