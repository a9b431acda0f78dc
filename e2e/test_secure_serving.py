"""The secure port against the real control plane: HTTPS, TokenReview, SubjectAccessReview.

kube-pysched runs with kube-scheduler's own identity (system:kube-scheduler, whose bootstrap
ClusterRole may create tokenreviews and subjectaccessreviews) when the local control plane
provides it, so delegation is shown to work without system:masters. The ServiceAccount token
comes from the TokenRequest API; RBAC decides /metrics through kube-pysched's
SubjectAccessReview. Answers are cached for 10s (as kube-scheduler's), so what changes after
an RBAC change is awaited with a deadline, never a sleep.
"""

from __future__ import annotations

import datetime as dt
import http.client
import ipaddress
import json
import socket
import ssl
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client as k8s

from e2e.cluster import ControlPlane, ExternalCluster, wait_for
from e2e.cluster.kubeconfig import service_account_token
from e2e.cluster.ports import LOOPBACK, PortReservation
from e2e.pysched import REPO_ROOT, Pysched, default_config

SCHEDULER_NAME = "secure-serving"
METRICS_READER = "kube-pysched-e2e-metrics-reader"  # as the chart's ...-metrics-reader role


def _insecure() -> ssl.SSLContext:
    """Accepts any server certificate: for the checks that are not about the certificate."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _get(
    base: str, path: str, token: str | None = None, ctx: ssl.SSLContext | None = None
) -> tuple[int, str, dict[str, str]]:
    host, port = base.removeprefix("https://").rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), context=ctx or _insecure(), timeout=15)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace"), dict(resp.getheaders())
    finally:
        conn.close()


def _identity(cluster: ControlPlane | ExternalCluster) -> Path:
    """system:kube-scheduler on the local control plane; the suite's kubeconfig elsewhere."""
    if isinstance(cluster, ControlPlane):
        scheduler = cluster.scheduler_kubeconfig
        assert scheduler.exists(), scheduler
        return scheduler
    return Path(cluster.kubeconfig)


@pytest.fixture
def secure_pysched(
    cluster: ControlPlane | ExternalCluster, pysched: Callable[..., Pysched]
) -> Callable[..., Pysched]:
    def start(**kwargs: object) -> Pysched:
        config = default_config(profiles=[{"schedulerName": SCHEDULER_NAME}])
        return pysched(config, kubeconfig=_identity(cluster), secure=True, **kwargs)

    return start


@pytest.fixture
def rbac(api_client: k8s.ApiClient) -> Iterator[tuple[k8s.RbacAuthorizationV1Api, str]]:
    """The metrics-reader ClusterRole and its name (deleted afterwards with its bindings)."""
    api = k8s.RbacAuthorizationV1Api(api_client)
    role = k8s.V1ClusterRole(
        metadata=k8s.V1ObjectMeta(name=f"{METRICS_READER}-{uuid.uuid4().hex[:6]}"),
        rules=[k8s.V1PolicyRule(non_resource_urls=["/metrics"], verbs=["get"])],
    )
    created = api.create_cluster_role(role)
    try:
        yield api, created.metadata.name
    finally:
        for binding in api.list_cluster_role_binding().items:
            if binding.role_ref.name == created.metadata.name:
                api.delete_cluster_role_binding(binding.metadata.name)
        api.delete_cluster_role(created.metadata.name)


def test_health_is_open_and_metrics_follow_rbac(
    secure_pysched: Callable[..., Pysched],
    core_v1: k8s.CoreV1Api,
    rbac: tuple[k8s.RbacAuthorizationV1Api, str],
    namespace: str,
) -> None:
    proc = secure_pysched()
    base = proc.secure_url

    # (1) health endpoints need no credentials (--authorization-always-allow-paths).
    for path in ("/healthz", "/livez", "/readyz"):
        assert _get(base, path)[:2] == (200, "ok"), path

    # (2) no credentials: anonymous, then forbidden by the SubjectAccessReview (403).
    status, body, headers = _get(base, "/metrics")
    assert status == 403, body
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'forbidden: User "system:anonymous" cannot get path "/metrics"',
        "reason": "Forbidden",
        "details": {},
        "code": 403,
    }
    assert _get(base, "/configz")[0] == 403
    # A token the API server rejects is 401, on the open paths as well.
    assert _get(base, "/metrics", token="not-a-token")[0] == 401
    assert _get(base, "/healthz", token="not-a-token")[0] == 401

    # (3) a valid ServiceAccount token without RBAC: 403 naming the ServiceAccount.
    token = service_account_token(core_v1, namespace, "prometheus")
    user = f"system:serviceaccount:{namespace}:prometheus"
    status, body, _ = _get(base, "/metrics", token=token)
    assert status == 403, body
    assert json.loads(body)["message"].startswith(
        f'forbidden: User "{user}" cannot get path "/metrics"'
    )

    # (4) bound to the metrics-reader ClusterRole: 200 with Prometheus text (once the cached
    # denial has expired).
    rbac_api, role_name = rbac
    rbac_api.create_cluster_role_binding(
        k8s.V1ClusterRoleBinding(
            metadata=k8s.V1ObjectMeta(name=role_name),
            role_ref=k8s.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role_name
            ),
            subjects=[
                k8s.RbacV1Subject(kind="ServiceAccount", name="prometheus", namespace=namespace)
            ],
        )
    )
    seen: list[tuple[int, str]] = []

    def metrics_allowed() -> bool | str:
        status, body, _ = _get(base, "/metrics", token=token)
        seen[:] = [(status, body)]
        return status == 200 or f"{status}: {body[:120]}"

    wait_for(metrics_allowed, timeout=60, what="/metrics with the metrics-reader binding")
    status, body = seen[0]
    assert "# TYPE scheduler_pending_pods gauge" in body
    assert "scheduler_schedule_attempts_total" in body
    # The role grants /metrics only.
    assert _get(base, "/configz", token=token)[0] == 403

    # The plain development port, on loopback, still answers without credentials.
    assert proc.get("/metrics")[0] == 200


def test_refusals_are_kube_schedulers(
    local_control_plane: ControlPlane, secure_pysched: Callable[..., Pysched]
) -> None:
    """The same requests to the real kube-scheduler's secure port and to kube-pysched's get the
    same status and Status body (/configz: not in either's always-allowed paths)."""
    proc = secure_pysched()
    upstream = f"https://{LOOPBACK}:{local_control_plane.ports['kube-scheduler']}"
    for path, token in [("/configz", None), ("/configz", "not-a-token"), ("/livez", None)]:
        theirs = _get(upstream, path, token=token)
        ours = _get(proc.secure_url, path, token=token)
        assert ours[0] == theirs[0], (path, token, ours, theirs)
        if ours[0] != 200:
            assert json.loads(ours[1]) == json.loads(theirs[1]), (path, token)
    assert _get(upstream, "/configz")[0] == 403  # anonymous: authenticated, then forbidden


DEBUG_PATHS = ("/flagz", "/statusz", "/debug/pprof/profile?seconds=1")


def _raw_plain_http(base: str) -> bytes:
    """A plain HTTP request sent to the HTTPS port; the raw answer until the server closes."""
    host, port = base.removeprefix("https://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks)


def test_debug_pages_follow_rbac_and_plain_http_is_a_400(
    local_control_plane: ControlPlane,
    secure_pysched: Callable[..., Pysched],
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
) -> None:
    """/flagz, /statusz and the CPU profile: 403 anonymous, 200 for a caller RBAC allows, on
    both schedulers; plain HTTP to either's HTTPS port gets Go's 400, byte for byte."""
    proc = secure_pysched()
    upstream = f"https://{LOOPBACK}:{local_control_plane.ports['kube-scheduler']}"
    for path in DEBUG_PATHS:
        for base in (proc.secure_url, upstream):
            assert _get(base, path)[0] == 403, (base, path)

    rbac_api = k8s.RbacAuthorizationV1Api(api_client)
    role_name = f"kube-pysched-e2e-debug-reader-{uuid.uuid4().hex[:6]}"
    rbac_api.create_cluster_role(
        k8s.V1ClusterRole(
            metadata=k8s.V1ObjectMeta(name=role_name),
            rules=[
                k8s.V1PolicyRule(
                    non_resource_urls=["/flagz", "/statusz", "/debug/pprof/*"], verbs=["get"]
                )
            ],
        )
    )
    try:
        token = service_account_token(core_v1, namespace, "debugger")
        rbac_api.create_cluster_role_binding(
            k8s.V1ClusterRoleBinding(
                metadata=k8s.V1ObjectMeta(name=role_name),
                role_ref=k8s.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role_name
                ),
                subjects=[
                    k8s.RbacV1Subject(kind="ServiceAccount", name="debugger", namespace=namespace)
                ],
            )
        )

        def allowed() -> bool | str:
            status, body, _ = _get(proc.secure_url, "/flagz", token=token)
            return status == 200 or f"{status}: {body[:120]}"

        wait_for(allowed, timeout=60, what="/flagz with the debug-reader binding")
        for base in (proc.secure_url, upstream):
            status, body, headers = _get(base, "/flagz", token=token)
            assert status == 200 and body.startswith("\nkube-scheduler flagz\n"), (base, body)
            assert headers["Content-Type"] == "text/plain; charset=utf-8"
            status, body, _ = _get(base, "/statusz", token=token)
            assert status == 200 and body.startswith("\nkube-scheduler statusz\n"), (base, body)
        ours = _get(proc.secure_url, "/flagz", token=token)[1]
        assert any(line.startswith("secure-port") for line in ours.splitlines())

        status, body, headers = _get(proc.secure_url, DEBUG_PATHS[2], token=token)
        assert status == 200, body
        assert headers["Content-Type"] == "application/json"
        profile = json.loads(body)
        # An idle scheduler's profile may hold no samples: py-spy leaves idle threads out.
        assert "speedscope" in profile["$schema"] and "profiles" in profile, body[:200]
        # kube-scheduler's answer to the same request is a Go pprof profile (gzip).
        status, body, _ = _get(upstream, DEBUG_PATHS[2], token=token)
        assert status == 200
    finally:
        for binding in rbac_api.list_cluster_role_binding().items:
            if binding.role_ref.name == role_name:
                rbac_api.delete_cluster_role_binding(binding.metadata.name)
        rbac_api.delete_cluster_role(role_name)

    theirs = _raw_plain_http(upstream)
    assert theirs.startswith(b"HTTP/1.0 400 Bad Request\r\n")
    assert _raw_plain_http(proc.secure_url) == theirs


def _served_chain(base: str) -> x509.Certificate:
    host, port = base.removeprefix("https://").rsplit(":", 1)
    pem = ssl.get_server_certificate((host, int(port)))
    return x509.load_pem_x509_certificate(pem.encode())


def test_generated_certificate_is_for_localhost(secure_pysched: Callable[..., Pysched]) -> None:
    """(5a) Without --tls-cert-file: kube-scheduler's in-memory pair for localhost/127.0.0.1."""
    proc = secure_pysched()
    leaf = _served_chain(proc.secure_url)
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    (cn,) = leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    (issuer,) = leaf.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert str(cn.value).startswith("localhost@")
    assert str(issuer.value).startswith("localhost-ca@")  # its own throwaway CA
    # No client trusting only the system roots accepts it.
    with pytest.raises(ssl.SSLCertVerificationError):
        _get(proc.secure_url, "/healthz", ctx=ssl.create_default_context())


def _serving_pair(tmp_path: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-pysched.e2e")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("kube-pysched.e2e"),
                    x509.IPAddress(ipaddress.ip_address(LOOPBACK)),
                ]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "serving.crt", tmp_path / "serving.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path


def test_given_certificate_is_served(
    secure_pysched: Callable[..., Pysched], tmp_path: Path
) -> None:
    """(5b) --tls-cert-file/--tls-private-key-file: a client trusting that cert verifies."""
    cert, key = _serving_pair(tmp_path)
    proc = secure_pysched(
        extra_args=["--tls-cert-file", str(cert), "--tls-private-key-file", str(key)]
    )
    verified = ssl.create_default_context(cafile=str(cert))  # hostname checked: 127.0.0.1
    assert _get(proc.secure_url, "/readyz", ctx=verified)[:2] == (200, "ok")
    assert _served_chain(proc.secure_url) == x509.load_pem_x509_certificate(cert.read_bytes())


def test_plain_port_refuses_a_non_loopback_address(
    cluster: ControlPlane | ExternalCluster,
) -> None:
    """(6) The development-only plain-HTTP port never listens beyond loopback."""
    with PortReservation() as ports:
        port = ports.take()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "scheduler",
                "--kubeconfig",
                str(cluster.kubeconfig),
                "--port",
                str(port),
                "--address",
                "0.0.0.0",
            ],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "kube-pysched: --address 0.0.0.0 is not a loopback address: the plain-HTTP --port has "
        "no authentication and serves loopback only; use --secure-port"
    ]
