"""What a client certificate handshake puts on the wire, read from a TLS 1.2 handshake (where
the client's Certificate message is not encrypted)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import structlog.testing
from cryptography import x509
from kubernetes import client as k8s

from e2e.bench.rest import RestClient
from e2e.cluster.certs import Pki, generate_pki
from scheduler.client.config import ClientConfig
from scheduler.client.rest import ssl_context
from scheduler.client.tls import send_certificate_file_only


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return generate_pki(tmp_path_factory.mktemp("pki"))


def _der(pem_path: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(pem_path.read_text())


def _handshake_bytes_sent(pki: Pki, client: ssl.SSLContext) -> bytes:
    """Everything the client sends in a handshake with a server that asks for its certificate
    (both ends in memory, the bytes pumped between them)."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    server_ctx.load_cert_chain(pki.apiserver.cert, pki.apiserver.key)
    server_ctx.load_verify_locations(pki.ca.cert)
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls_client = client.wrap_bio(to_client, to_server, server_hostname="localhost")
    from_client, from_server = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls_server = server_ctx.wrap_bio(from_client, from_server, server_side=True)
    sent = bytearray()
    done = {"client": False, "server": False}
    for _ in range(20):
        for name, end in (("client", tls_client), ("server", tls_server)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        data = to_server.read()
        sent.extend(data)
        from_client.write(data)
        to_client.write(from_server.read())
        if all(done.values()):
            return bytes(sent)
    raise AssertionError("the handshake did not complete")


def test_the_scheduler_sends_its_certificate_without_the_ca(pki: Pki) -> None:
    client_pair = next(iter(pki.clients.values()))
    config = ClientConfig(
        server="https://localhost",
        ca_file=str(pki.ca.cert),
        cert_file=str(client_pair.cert),
        key_file=str(client_pair.key),
    )
    sent = _handshake_bytes_sent(pki, ssl_context(config))
    assert _der(client_pair.cert) in sent
    assert _der(pki.ca.cert) not in sent


def test_openssl_alone_would_send_the_ca_too(pki: Pki) -> None:
    """The control: without send_certificate_file_only the same handshake carries the CA."""
    client_pair = next(iter(pki.clients.values()))
    ctx = ssl.create_default_context(cafile=str(pki.ca.cert))
    ctx.load_cert_chain(client_pair.cert, client_pair.key)
    sent = _handshake_bytes_sent(pki, ctx)
    assert _der(client_pair.cert) in sent
    assert _der(pki.ca.cert) in sent
    assert send_certificate_file_only(ctx) is True
    assert _der(pki.ca.cert) not in _handshake_bytes_sent(pki, ctx)


def test_where_libssl_cannot_be_reached_the_chain_goes_out_with_a_warning(
    pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_libssl() -> None:
        raise OSError("no libssl here")

    monkeypatch.setattr("scheduler.client.tls._libssl", no_libssl)
    client_pair = next(iter(pki.clients.values()))
    ctx = ssl.create_default_context(cafile=str(pki.ca.cert))
    ctx.load_cert_chain(client_pair.cert, client_pair.key)
    with structlog.testing.capture_logs() as logs:
        assert send_certificate_file_only(ctx) is False
    assert [entry["reason"] for entry in logs if entry["log_level"] == "warning"] == [
        "no libssl here"
    ]
    assert _der(pki.ca.cert) in _handshake_bytes_sent(pki, ctx)


def test_the_benchmark_creator_sends_its_certificate_without_the_ca(pki: Pki) -> None:
    """The harness's bulk client costs the API server what the scheduler's does, per request."""
    client_pair = next(iter(pki.clients.values()))
    conf = k8s.Configuration()
    conf.host = "https://localhost:6443"
    conf.ssl_ca_cert = str(pki.ca.cert)
    conf.cert_file = str(client_pair.cert)
    conf.key_file = str(client_pair.key)
    rest = RestClient(k8s.ApiClient(conf))
    sent = _handshake_bytes_sent(pki, rest.context)
    assert _der(client_pair.cert) in sent
    assert _der(pki.ca.cert) not in sent


def test_the_front_proxy_ca_signs_only_the_front_proxy_identity(pki: Pki) -> None:
    """With a requestheader CA of its own (kubeadm's layout) a client certificate fails the
    front-proxy verification at once instead of being verified twice on every request."""

    def load(path: Path) -> x509.Certificate:
        return x509.load_pem_x509_certificate(path.read_bytes())

    proxy_ca = load(pki.front_proxy_ca.cert)
    ca = load(pki.ca.cert)
    load(pki.front_proxy_client.cert).verify_directly_issued_by(proxy_ca)
    for pair in pki.clients.values():
        client_cert = load(pair.cert)
        client_cert.verify_directly_issued_by(ca)
        with pytest.raises(ValueError):
            client_cert.verify_directly_issued_by(proxy_ca)
