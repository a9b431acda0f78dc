"""The secure port's TLS: the serving certificate (given, or generated at start) and the context.

Without --tls-cert-file/--tls-private-key-file, kube-scheduler generates an in-memory pair at
start (SecureServingOptions.MaybeDefaultWithSelfSignedCerts("localhost", nil, [127.0.0.1]) and
client-go's cert.GenerateSelfSignedCertKey): a throwaway CA "localhost-ca@<unix time>" signs a
serving certificate "localhost@<unix time>" for DNS localhost and IP 127.0.0.1 (plus the bind
address when it is a specific one), valid from an hour ago for a year; the chain served is the
certificate followed by that CA. This module does the same with `cryptography`. Python's ssl
loads keys only from files, so the generated pair is handed over as anonymous memory files
(memfd, Linux; the root filesystem may be read-only) or, elsewhere, through a private (0700)
temporary directory removed as soon as the context has loaded it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import shutil
import ssl
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SELF_SIGNED_HOST = "localhost"
SELF_SIGNED_IPS = ("127.0.0.1",)
_VALIDITY = dt.timedelta(days=365)
_CLOCK_SKEW = dt.timedelta(hours=1)


class TLSConfigError(Exception):
    """A certificate, key or CA file that cannot be used; reported at start."""


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


def _load_generated(ctx: ssl.SSLContext, pair: ServingCert) -> None:
    """Loads an in-memory pair: through anonymous memory files where the OS has them (Linux:
    nothing touches a filesystem, which may be read-only), else a private temporary directory
    removed right after."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fds = [os.memfd_create(name) for name in ("kube-scheduler.crt", "kube-scheduler.key")]
        try:
            for fd, data in zip(fds, (pair.cert_pem, pair.key_pem), strict=True):
                os.write(fd, data)
            ctx.load_cert_chain(f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}")
        finally:
            for fd in fds:
                os.close(fd)
        return
    directory = tempfile.mkdtemp(prefix="kube-pysched-serving-")  # mode 0700
    try:
        cert_path = os.path.join(directory, "kube-scheduler.crt")
        key_path = os.path.join(directory, "kube-scheduler.key")
        for path, data in ((cert_path, pair.cert_pem), (key_path, pair.key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        ctx.load_cert_chain(cert_path, key_path)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def server_context(
    *,
    cert_file: str = "",
    key_file: str = "",
    client_ca_file: str = "",
    bind_address: str = "0.0.0.0",
) -> ssl.SSLContext:
    """The secure port's context: TLS 1.2 or later, the given or a generated serving pair, and
    client certificates requested (verified against `client_ca_file`) when a CA is given."""
    if bool(cert_file) != bool(key_file):
        raise TLSConfigError("--tls-cert-file and --tls-private-key-file must be given together")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if cert_file:
            ctx.load_cert_chain(cert_file, key_file)
        else:
            _load_generated(ctx, generate_self_signed(bind_address))
    except (OSError, ssl.SSLError) as err:
        raise TLSConfigError(f"cannot load the serving certificate: {err}") from err
    if client_ca_file:
        try:
            ctx.load_verify_locations(cafile=client_ca_file)
        except (OSError, ssl.SSLError) as err:
            raise TLSConfigError(f"cannot load --client-ca-file {client_ca_file}: {err}") from err
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx
