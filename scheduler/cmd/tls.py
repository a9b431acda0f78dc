"""The secure port's TLS context: the given serving certificate, or one generated at start.

Python's ssl loads keys only from files, so a generated pair (`selfsigned`, kube-scheduler's
in-memory pair) is handed over as anonymous memory files (memfd, Linux; the root filesystem may
be read-only) or, elsewhere, through a private (0700) temporary directory removed as soon as the
context has loaded it.
"""

from __future__ import annotations

import os
import shutil
import ssl
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.cmd.selfsigned import ServingCert


class TLSConfigError(Exception):
    """A certificate, key or CA file that cannot be used; reported at start."""


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
            # Imported here: `cryptography` is only needed to generate a pair.
            from scheduler.cmd.selfsigned import generate_self_signed

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
