"""The secure port: the generated serving certificate, given files, client certificates."""

from __future__ import annotations

import datetime as dt
import http.client
import ipaddress
import json
import ssl
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from scheduler.api.json_types import Json
from scheduler.clock import FakeClock
from scheduler.cmd.auth import Authenticator, Authorizer, RequestGuard, TokenAuthenticator
from scheduler.cmd.selfsigned import generate_self_signed
from scheduler.cmd.server import HealthServer
from scheduler.cmd.tls import TLSConfigError, server_context


def _certs(pem: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(pem)


def _sans(cert: x509.Certificate) -> tuple[list[str], list[str]]:
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return san.get_values_for_type(x509.DNSName), [
        str(ip) for ip in san.get_values_for_type(x509.IPAddress)
    ]


def test_generated_pair_is_kube_schedulers() -> None:
    now = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    pair = generate_self_signed("0.0.0.0", now=now)
    leaf, ca = _certs(pair.cert_pem)
    stamp = int(now.timestamp())
    assert leaf.subject.rfc4514_string() == f"CN=localhost@{stamp}"
    assert ca.subject.rfc4514_string() == f"CN=localhost-ca@{stamp}"
    assert leaf.issuer == ca.subject == ca.issuer
    assert _sans(leaf) == (["localhost"], ["127.0.0.1"])
    assert leaf.not_valid_before_utc == now - dt.timedelta(hours=1)
    assert leaf.not_valid_after_utc == now - dt.timedelta(hours=1) + dt.timedelta(days=365)
    leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_a_specific_bind_address_is_in_the_certificate() -> None:
    leaf = _certs(generate_self_signed("10.1.2.3").cert_pem)[0]
    assert _sans(leaf) == (["localhost"], ["127.0.0.1", "10.1.2.3"])


def _write_pair(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_context_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(TLSConfigError, match="must be given together"):
        server_context(cert_file="/x.crt")
    with pytest.raises(TLSConfigError, match="cannot load the serving certificate"):
        server_context(cert_file=str(tmp_path / "no.crt"), key_file=str(tmp_path / "no.key"))
    cert, key = _write_pair(tmp_path, "serving")
    with pytest.raises(TLSConfigError, match="cannot load --client-ca-file"):
        server_context(cert_file=str(cert), key_file=str(key), client_ca_file="/nope")


class _Reviews:
    def create_token_review(self, token: str, audiences: list[str] | None = None) -> Json:
        if token == "good":
            return {"status": {"authenticated": True, "user": {"username": "prom"}}}
        return {"status": {"authenticated": False}}

    def create_subject_access_review(self, spec: Json) -> Json:
        return {"status": {"allowed": spec["user"] in ("prom", "scraper")}}


def _guard() -> RequestGuard:
    reviews = _Reviews()
    clock = FakeClock()
    return RequestGuard(
        Authenticator(TokenAuthenticator(reviews, clock=clock)), Authorizer(reviews, clock=clock)
    )


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[tuple[HealthServer, Path, Path]]:
    """A secure server with a client CA; yields it, the CA file and the client pair's dir."""
    ca_cert, ca_key = _write_pair(tmp_path, "client-ca")
    srv = HealthServer(
        "127.0.0.1",
        0,
        readiness=list,
        configz=dict,
        tls=server_context(client_ca_file=str(ca_cert), bind_address="127.0.0.1"),
        guard=_guard(),
    )
    srv.start()
    try:
        yield srv, ca_cert, ca_key
    finally:
        srv.stop()


def _get(
    srv: HealthServer,
    path: str,
    token: str | None = None,
    ctx: ssl.SSLContext | None = None,
) -> tuple[int, bytes, ssl.SSLSocket | None]:
    if ctx is None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx, timeout=10)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read(), conn.sock  # type: ignore[return-value]
    finally:
        conn.close()


def test_secure_server_guards_every_request(secure: tuple[HealthServer, Path, Path]) -> None:
    srv = secure[0]
    assert _get(srv, "/healthz")[:2] == (200, b"ok")
    code, body, _ = _get(srv, "/metrics")
    assert code == 403 and json.loads(body)["reason"] == "Forbidden"
    assert _get(srv, "/metrics", "bad")[0] == 401
    code, body, _ = _get(srv, "/metrics", "good")
    assert code == 200 and b"scheduler_" in body


def test_generated_certificate_verifies_for_localhost(
    secure: tuple[HealthServer, Path, Path],
) -> None:
    srv = secure[0]
    served = ssl.get_server_certificate(("127.0.0.1", srv.port))
    leaf = x509.load_pem_x509_certificate(served.encode())
    assert _sans(leaf) == (["localhost"], ["127.0.0.1"])


def test_client_certificate_authenticates(
    secure: tuple[HealthServer, Path, Path], tmp_path: Path
) -> None:
    srv, ca_cert, ca_key = secure
    ca = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    client = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "scraper")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(signer, hashes.SHA256())  # type: ignore[arg-type]
    )
    (tmp_path / "c.crt").write_bytes(client.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "c.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(tmp_path / "c.crt", tmp_path / "c.key")
    assert _get(srv, "/metrics", ctx=ctx)[0] == 200


def test_given_pair_is_served(tmp_path: Path) -> None:
    cert, key = _write_pair(tmp_path, "given.example")
    srv = HealthServer(
        "127.0.0.1",
        0,
        readiness=list,
        tls=server_context(cert_file=str(cert), key_file=str(key)),
        guard=_guard(),
    )
    srv.start()
    try:
        ctx = ssl.create_default_context(cafile=str(cert))
        ctx.check_hostname = False
        assert _get(srv, "/livez", ctx=ctx)[:2] == (200, b"ok")
        served = ssl.get_server_certificate(("127.0.0.1", srv.port)).encode()
        assert x509.load_pem_x509_certificate(served) == x509.load_pem_x509_certificate(
            cert.read_bytes()
        )
    finally:
        srv.stop()


def test_generated_pair_without_memfd_leaves_no_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delattr("os.memfd_create", raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    ctx = server_context()
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert list(tmp_path.iterdir()) == []


def test_given_certificate_needs_no_cryptography(tmp_path: Path) -> None:
    """`cryptography` (about 8 MiB resident) is loaded only to generate a pair: not by the app's
    imports, nor for a given certificate."""
    pair = generate_self_signed("127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    cert, key = str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")
    probe = textwrap.dedent(
        f"""
        import sys
        import scheduler.cmd.app
        from scheduler.cmd.tls import server_context
        server_context(cert_file={cert!r}, key_file={key!r})
        print(sorted(m for m in sys.modules if m.split(".")[0] == "cryptography"))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_plain_http_on_the_https_port_is_gos_400_not_a_reset(
    secure: tuple[HealthServer, Path, Path],
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", secure[0].port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        resp = conn.getresponse()
        assert (resp.status, resp.version) == (400, 10)
        assert resp.read() == b"Client sent an HTTP request to an HTTPS server.\n"
    finally:
        conn.close()
    assert _get(secure[0], "/healthz")[:2] == (200, b"ok")  # TLS clients are still served
