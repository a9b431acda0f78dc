"""Generate the PKI one control plane needs, with the ``cryptography`` package.

Each run gets its own throw-away CA, so two control planes never trust each other's
clients. The aggregation layer's front proxy has a CA of its own, as kubeadm gives it: when
the requestheader CA is the client CA, kube-apiserver verifies every client certificate
twice (once as a would-be front proxy), which doubles a cost the benchmark measures. ECDSA
P-256 keys are used for TLS (fast to generate); the service-account signing key is RSA because
every Kubernetes version accepts it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: First address of the service CIDR; the apiserver's in-cluster name resolves to it.
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"

_VALIDITY = dt.timedelta(days=30)

FRONT_PROXY_CLIENT = "front-proxy-client"

# Client identities: CN is the user, O the groups. The built-in RBAC bootstrap policy grants
# system:kube-controller-manager and system:kube-scheduler exactly what those components need.
CLIENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ("kube-pysched-admin", ("system:masters",)),
    "kube-controller-manager": ("system:kube-controller-manager", ()),
    "kube-scheduler": ("system:kube-scheduler", ()),
    # kwok patches node/pod status, deletes pods and renews leases for every fake node.
    "kwok": ("kwok-controller", ("system:masters",)),
}


@dataclass(frozen=True)
class CertPair:
    """Paths of a PEM certificate and its private key."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Everything the control plane's flags and kubeconfigs point at."""

    dir: Path
    ca: CertPair
    #: The requestheader CA and the aggregation-layer identity it signs; configuring them also
    #: gives the components' delegated authentication the CA they look for (else they log errors).
    front_proxy_ca: CertPair
    front_proxy_client: CertPair
    apiserver: CertPair
    serving: CertPair
    clients: dict[str, CertPair]
    sa_key: Path
    sa_pub: Path


def generate_pki(directory: Path) -> Pki:
    """Write a CA, serving certs, client certs and service-account keys into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_cert, ca_key, ca = _self_signed_ca(directory, "ca", "kube-pysched-ca", now)
    proxy_cert, proxy_key, front_proxy_ca = _self_signed_ca(
        directory, "front-proxy-ca", "kube-pysched-front-proxy-ca", now
    )

    def issue(
        name: str,
        cn: str,
        orgs: tuple[str, ...],
        server: bool,
        sans: list[str],
        issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] = (ca_cert, ca_key),
    ) -> CertPair:
        issuer_cert, issuer_key = issuer
        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
        subject = x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            _base(subject, issuer_cert.subject, key.public_key(), now, ca=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                critical=False,
            )
        )
        if sans:
            builder = builder.add_extension(_sans(sans), critical=False)
        return _write(directory, name, builder.sign(issuer_key, hashes.SHA256()), key)

    local = ["127.0.0.1", "localhost"]
    apiserver = issue(
        "apiserver",
        "kube-apiserver",
        (),
        True,
        [
            *local,
            KUBERNETES_SERVICE_IP,
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ],
    )
    # One serving cert for kube-controller-manager, kube-scheduler(s) and kwok: all local.
    serving = issue("serving", "kube-pysched-components", (), True, local)
    clients = {
        name: issue(f"client-{name}", cn, orgs, False, []) for name, (cn, orgs) in CLIENTS.items()
    }
    front_proxy_client = issue(
        "client-front-proxy", FRONT_PROXY_CLIENT, (), False, [], (proxy_cert, proxy_key)
    )

    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sa_key = directory / "sa.key"
    sa_pub = directory / "sa.pub"
    sa_key.write_bytes(
        sa.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    sa_pub.write_bytes(
        sa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    for path in directory.glob("*.key"):
        path.chmod(0o600)
    return Pki(
        directory,
        ca,
        front_proxy_ca,
        front_proxy_client,
        apiserver,
        serving,
        clients,
        sa_key,
        sa_pub,
    )


def _self_signed_ca(
    directory: Path, file_name: str, common_name: str, now: dt.datetime
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey, CertPair]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        _base(name, name, key.public_key(), now, ca=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key, _write(directory, file_name, cert, key)


def _base(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: dt.datetime,
    *,
    ca: bool,
) -> x509.CertificateBuilder:
    """What CAs and leaves share: names, key, validity, and the basic constraints and key usage
    of a CA (certificate and CRL signing) or a leaf (digital signature only)."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        # Back-date a little: the components reject certificates "not yet valid" on skew.
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=ca,
                crl_sign=ca,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )


def _sans(names: list[str]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def _write(
    directory: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> CertPair:
    pair = CertPair(directory / f"{name}.crt", directory / f"{name}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return pair
