"""Poll-with-deadline helpers and HTTP(S) health probes - never blind sleeps.

Every wait fails fast (with the log tail) when a process it depends on has died, instead of
running into its deadline.
"""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any


class NotReadyError(TimeoutError):
    """A condition did not hold before its deadline; the message says what was seen last."""


def wait_for(
    check: Callable[[], bool | str],
    *,
    timeout: float,
    what: str,
    interval: float = 0.2,
    guard: Callable[[], None] | None = None,
) -> None:
    """Poll ``check`` until it returns True, or raise NotReadyError after ``timeout`` seconds.

    ``check`` may return a string to describe why it is not ready yet (kept for the error
    message); ``guard`` is called before each poll and may raise to abort early.
    """
    deadline = time.monotonic() + timeout
    last: bool | str = False
    while True:
        if guard is not None:
            guard()
        last = check()
        if last is True:
            return
        if time.monotonic() >= deadline:
            detail = f": last seen {last!r}" if isinstance(last, str) else ""
            raise NotReadyError(f"{what} not ready after {timeout:.0f}s{detail}")
        time.sleep(interval)


def wait_default_service_account(
    core: Any,
    namespace: str,
    *,
    timeout: float = 60,
    what: str | None = None,
    guard: Callable[[], None] | None = None,
) -> None:
    """Wait until kube-controller-manager has given `namespace` its ``default`` ServiceAccount
    (`core`: a kubernetes CoreV1Api); pods cannot be created in the namespace before."""

    def has_default_sa() -> bool | str:
        accounts = core.list_namespaced_service_account(namespace).items
        return any(sa.metadata.name == "default" for sa in accounts) or "no default SA yet"

    wait_for(
        has_default_sa,
        timeout=timeout,
        what=what or f"ServiceAccount {namespace}/default",
        guard=guard,
    )


def tls_context(ca: Path, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    """A client context trusting only our CA, optionally presenting a client certificate."""
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key) if key else None)
    return ctx


def http_get(
    url: str, context: ssl.SSLContext | None = None, timeout: float = 3.0
) -> tuple[int, str]:
    """GET ``url``; returns (status, body) and (0, error text) when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as resp:
            return int(resp.status), resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc)


def get_text(url: str, context: ssl.SSLContext | None = None, timeout: float = 10.0) -> str:
    """GET ``url``'s body; raises when it does not answer 200 (urllib's errors are OSErrors)."""
    with urllib.request.urlopen(url, timeout=timeout, context=context) as resp:
        body: bytes = resp.read()
    return body.decode()


def probe(url: str, context: ssl.SSLContext | None = None, expect: str | None = None) -> bool | str:
    """A ``wait_for`` check: True when ``url`` answers 200 (and contains ``expect``)."""
    status, body = http_get(url, context)
    if status == 200 and (expect is None or expect in body):
        return True
    return f"HTTP {status}: {body.strip()[:300]}"
