"""A validating admission webhook that slows pod status writes: a slow API server, for tests.

Real clusters have slow admission webhooks; this one makes a status write take `delay` seconds
for one namespace (kwok's own status updates are exempt), which opens the window between a
failed attempt's PodScheduled=False patch and a later binding wide enough to test ordering.
It allows every request. Served over HTTPS on loopback with a throw-away CA.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from e2e.cluster.certs import generate_pki
from e2e.cluster.ports import LOOPBACK
from e2e.cluster.readiness import wait_for


class SlowWrites:
    """What the webhook saw: the pods whose status writes it delayed, in order."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.delayed: list[str] = []

    def seen(self, pod_name: str) -> bool:
        with self.lock:
            return pod_name in self.delayed


def _handler(writes: SlowWrites) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = review["request"]
            with writes.lock:
                writes.delayed.append(request.get("name", ""))
            time.sleep(writes.delay)  # the slowness under test, not synchronisation
            body = json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": request["uid"], "allowed": True},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def slow_pod_status_writes(
    api_client: k8s.ApiClient, namespace: str, delay: float, workdir: Path
) -> Iterator[SlowWrites]:
    """Every pods/status write in `namespace` (but kwok's) waits `delay` s in admission."""
    pki = generate_pki(workdir / "webhook-pki")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.serving.cert, pki.serving.key)
    writes = SlowWrites(delay)
    server = ThreadingHTTPServer((LOOPBACK, 0), _handler(writes))
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="slow-webhook", daemon=True)
    thread.start()
    admission = k8s.AdmissionregistrationV1Api(api_client)
    name = f"slow-status-{namespace}"
    admission.create_validating_webhook_configuration(
        _configuration(name, namespace, server.server_address[1], pki.ca.cert.read_bytes())
    )
    try:
        _wait_until_active(k8s.CoreV1Api(api_client), namespace, writes)
        yield writes
    finally:
        admission.delete_validating_webhook_configuration(name)
        server.shutdown()
        server.server_close()


def _configuration(name: str, namespace: str, port: int, ca_pem: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "slow-status.kube-pysched.test",
                "clientConfig": {
                    "url": f"https://{LOOPBACK}:{port}/validate",
                    "caBundle": base64.b64encode(ca_pem).decode(),
                },
                "rules": [
                    {
                        "operations": ["UPDATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["pods/status"],
                        "scope": "Namespaced",
                    }
                ],
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": namespace},
                },
                "matchConditions": [
                    {
                        "name": "not-kwok",
                        "expression": "request.userInfo.username != 'kwok-controller'",
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 10,
                "failurePolicy": "Fail",
            }
        ],
    }


def _wait_until_active(core: k8s.CoreV1Api, namespace: str, writes: SlowWrites) -> None:
    """The API server picks the configuration up asynchronously: write a probe pod's status
    until the webhook sees it."""
    probe = "slow-webhook-probe"
    core.create_namespaced_pod(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": probe},
            "spec": {
                "schedulerName": "nobody",
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            },
        },
    )
    attempt = [0]

    def probed() -> bool | str:
        attempt[0] += 1
        condition = {"type": "ProbeWebhook", "status": "True", "reason": f"R{attempt[0]}"}
        core.patch_namespaced_pod_status(probe, namespace, {"status": {"conditions": [condition]}})
        return writes.seen(probe) or "webhook not called yet"

    wait_for(probed, timeout=60, what="the slow-status webhook to be called")
    core.delete_namespaced_pod(probe, namespace, grace_period_seconds=0)
