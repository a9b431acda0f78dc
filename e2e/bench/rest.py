"""A lean HTTPS client for the objects a run creates in bulk (pods, nodes).

The kubernetes client spends about 1.7 ms of Python per create (sanitising the body, building
reply models); on a 2-core machine that CPU is taken from the scheduler under test. Here each
thread keeps one keep-alive connection and sends pre-encoded JSON, reading only the status.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from typing import Any
from urllib.parse import urlparse

from kubernetes import client as k8s

from scheduler.client.tls import send_certificate_file_only

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
ATTEMPTS = 6


class CreateError(RuntimeError):
    """The API server refused a create for a reason retrying does not fix."""


class RestClient:
    """Requests with the credentials of a kubernetes ApiClient; safe to share across threads."""

    def __init__(self, api_client: k8s.ApiClient) -> None:
        conf = api_client.configuration
        url = urlparse(conf.host)
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or 443
        self.context = ssl.create_default_context(cafile=conf.ssl_ca_cert)
        if conf.cert_file:
            self.context.load_cert_chain(conf.cert_file, conf.key_file)
            # As the scheduler's client: the CA in the handshake costs the API server a longer
            # verification on every request, for both schedulers' runs alike.
            send_certificate_file_only(self.context)
        self.headers = {"Accept": "application/json"}
        token = (conf.api_key or {}).get("authorization")
        if token:
            self.headers["Authorization"] = token
        self._local = threading.local()
        self._all: list[http.client.HTTPSConnection] = []
        self._lock = threading.Lock()

    def _connection(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(
                self.host, self.port, context=self.context, timeout=60
            )
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """One request on this thread's connection, reconnecting once if the server closed it;
        a PATCH body is a JSON merge patch."""
        kind = "merge-patch+json" if method == "PATCH" else "json"
        headers = {**self.headers, "Content-Type": f"application/{kind}"}
        for reconnect in (False, True):
            conn = self._connection()
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                if reconnect:
                    raise
        raise AssertionError("unreachable")

    def create(self, path: str, obj: dict[str, Any], method: str = "POST") -> None:
        """POSTs obj (or PATCHes it), retrying throttling and server errors; a 409 counts as
        created."""
        body = json.dumps(obj, separators=(",", ":")).encode()
        for attempt in range(ATTEMPTS):
            status, reply = self.request(method, path, body)
            if status < 300 or status == 409:
                return
            if status not in RETRY_STATUSES or attempt == ATTEMPTS - 1:
                raise CreateError(f"{method} {path}: {status} {reply[:300]!r}")
            time.sleep(0.1 * 2**attempt)

    def delete(self, path: str) -> None:
        """DELETE with grace period 0; a 404 is fine (already gone)."""
        body = b'{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}'
        status, reply = self.request("DELETE", path, body)
        if status >= 300 and status != 404:
            raise CreateError(f"DELETE {path}: {status} {reply[:300]!r}")

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
