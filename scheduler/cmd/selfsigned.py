"""kube-scheduler's in-memory serving pair, generated when no certificate is given.

Without --tls-cert-file/--tls-private-key-file, kube-scheduler generates a pair at start
(SecureServingOptions.MaybeDefaultWithSelfSignedCerts("localhost", nil, [127.0.0.1]) and
client-go's cert.GenerateSelfSignedCertKey): a throwaway CA "localhost-ca@<unix time>" signs a
serving certificate "localhost@<unix time>" for DNS localhost and IP 127.0.0.1 (plus the bind
address when it is a specific one), valid from an hour ago for a year; the chain served is the
certificate followed by that CA. This module does the same with `cryptography`, which is
imported only here: it costs about 8 MiB of resident memory, which a scheduler given its
certificate, or serving no HTTPS, does not need.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SELF_SIGNED_HOST = "localhost"
SELF_SIGNED_IPS = ("127.0.0.1",)
_VALIDITY = dt.timedelta(days=365)
_CLOCK_SKEW = dt.timedelta(hours=1)


@dataclass(frozen=True)
class ServingCert:
    """PEM bytes of the served chain (certificate first) and of its private key."""

    cert_pem: bytes
    key_pem: bytes


def _serial() -> int:
    return x509.random_serial_number()


def self_signed_names(bind_address: str) -> tuple[list[str], list[str]]:
    """(DNS names, IPs) of the generated certificate for a bind address, as kube-scheduler."""
    dns = [SELF_SIGNED_HOST]
    ips = list(SELF_SIGNED_IPS)
    try:
        address = ipaddress.ip_address(bind_address)
    except ValueError:
        address = None
    if address is not None and not address.is_unspecified and str(address) not in ips:
        ips.append(str(address))
    return dns, ips


def _certificate(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: rsa.RSAPublicKey,
    valid_from: dt.datetime,
    *,
    ca: bool,
) -> x509.CertificateBuilder:
    """What the CA and the serving certificate share: names, key, validity, the basic
    constraints and key usage of a CA (cert signing) or a leaf."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(_serial())
        .not_valid_before(valid_from)
        .not_valid_after(valid_from + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )


def generate_self_signed(
    bind_address: str = "0.0.0.0", *, now: dt.datetime | None = None
) -> ServingCert:
    """client-go's GenerateSelfSignedCertKey for kube-scheduler's names (see the module doc)."""
    dns, ips = self_signed_names(bind_address)
    now = now or dt.datetime.now(dt.UTC)
    stamp = int(now.timestamp())
    valid_from = now - _CLOCK_SKEW
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{SELF_SIGNED_HOST}-ca@{stamp}")])
    ca_cert = _certificate(ca_name, ca_name, ca_key.public_key(), valid_from, ca=True).sign(
        ca_key, hashes.SHA256()
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{SELF_SIGNED_HOST}@{stamp}")])
    cert = (
        _certificate(subject, ca_name, key.public_key(), valid_from, ca=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(
        serialization.Encoding.PEM
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return ServingCert(chain, key_pem)
