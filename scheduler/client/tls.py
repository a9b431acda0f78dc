"""The client certificate sent as client-go sends it: the certificate file's certificates only.

Why: when the client certificate file holds no chain, OpenSSL completes one from the trust
store at every handshake (unless SSL_MODE_NO_AUTO_CHAIN is set), so the cluster CA goes out
beside the certificate. kube-apiserver verifies the client certificate on every request, with
the peer's other certificates as intermediates, and a CA among them doubles each verification
(0.17-0.25 ms instead of 0.09-0.11 ms here; twice per request where the request-header
authenticator trusts the same CA): 22 % of the API server's CPU per bound pod in the 5000-node
capacity drain. The ssl module has no switch
for the mode, so it is set on the context's SSL_CTX through libssl.
"""

from __future__ import annotations

import _ssl
import ctypes
import ssl
import sys

import structlog

log = structlog.get_logger(__name__)

SSL_CTRL_MODE = 33  # SSL_CTX_set_mode / SSL_CTX_get_mode are SSL_CTX_ctrl(ctx, 33, mode, NULL)
SSL_MODE_NO_AUTO_CHAIN = 0x00000008


def _libssl() -> ctypes.CDLL:
    """The libssl the ssl module runs on (found through its extension's dependencies)."""
    lib = ctypes.CDLL(_ssl.__file__)
    lib.SSL_CTX_ctrl.restype = ctypes.c_long
    lib.SSL_CTX_ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
    lib.SSL_CTX_get_options.restype = ctypes.c_uint64
    lib.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
    return lib


def _ssl_ctx_pointer(ctx: ssl.SSLContext, lib: ctypes.CDLL) -> int | None:
    """The SSL_CTX* of `ctx`: CPython's context object holds it right after its object header;
    confirmed by reading the context's options back through libssl before anything is set."""
    if sys.implementation.name != "cpython":
        return None
    pointer = ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value
    if not pointer or lib.SSL_CTX_get_options(pointer) != int(ctx.options):
        return None
    return pointer


def send_certificate_file_only(ctx: ssl.SSLContext) -> bool:
    """Stops OpenSSL adding trust-store certificates to the client certificate `ctx` sends.
    False, with a warning, where it cannot be done (then the chain goes out as before: the
    API server spends more CPU per request, nothing else changes)."""
    try:
        lib = _libssl()
        pointer = _ssl_ctx_pointer(ctx, lib)
        if pointer is not None:
            mode = lib.SSL_CTX_ctrl(pointer, SSL_CTRL_MODE, SSL_MODE_NO_AUTO_CHAIN, None)
            if mode & SSL_MODE_NO_AUTO_CHAIN:
                return True
        reason = "the ssl module's context could not be reached through libssl"
    except (OSError, AttributeError) as err:  # no libssl symbols to call
        reason = str(err)
    log.warning(
        "the client certificate goes out with its CA chain: the API server verifies the "
        "CA too on every request",
        reason=reason,
    )
    return False
