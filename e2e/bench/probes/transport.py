"""HTTP/1.1 clients side by side, making the scheduler's writes: why kube-pysched has its own.

    python -m e2e.bench.probes.transport [--requests N] [--repeats R] [--kubeconfig PATH]

Starts a local control plane (no scheduler; or uses `--kubeconfig`), creates pods in a
namespace of its own, and for each client and request kind measures, on one thread with one
kept-alive connection, the client process's CPU (`time.process_time`) and wall time per request:
bind (POST pods/binding, a fresh pod each), status (PATCH pods/status, the PodScheduled
condition as a strategic merge patch) and event (POST an events.k8s.io/v1 Event, the reply
decoded). Clients: kube-pysched's RestClient through KubeApi (with its metrics and retry
bookkeeping; client-side rate limiting off), urllib3.PoolManager (what the `kubernetes` client
sends through) and http.client.HTTPSConnection, all with the kubeconfig's CA and client
certificate. Clients take turns round by round; medians are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import orjson
import urllib3

from e2e.cluster.controlplane import ControlPlane
from e2e.cluster.nodes import create_kwok_node
from scheduler.api.parse import parse_pod
from scheduler.client.api import KubeApi, events_path, pod_path
from scheduler.client.config import load_client_config
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, RestClient, ssl_context

NAMESPACE = "bench-transport"
NODE = "bench-node-1"
KINDS = ("bind", "status", "event")
JSON = "application/json"
Pod = dict[str, Any]


def pod_manifest(name: str) -> Pod:
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"schedulerName": "bench-nobody", "containers": [container]},
    }


def status_patch(i: int) -> dict[str, Any]:
    message = f"0/{1000 + i} nodes are available: insufficient cpu."
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    return {"status": {"conditions": [{**condition, "message": message}]}}


def event(pod: Pod) -> dict[str, Any]:
    meta = pod["metadata"]
    regarding = {"kind": "Pod", "namespace": NAMESPACE, "name": meta["name"], "uid": meta["uid"]}
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": NAMESPACE},
        "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-bench",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
        "note": f"Successfully assigned {NAMESPACE}/{meta['name']} to node-1",
        "regarding": {**regarding, "apiVersion": "v1"},
    }


def _check(status: int, what: str, data: bytes = b"") -> None:
    if status >= 300:
        raise RuntimeError(f"{what}: HTTP {status} {data[:200]!r}")


class Client:
    """A generic HTTP/1.1 client: a subclass sends one request and returns the reply body."""

    name = ""
    headers = {"Accept": JSON, "Accept-Encoding": "identity", "User-Agent": NAMESPACE}

    def send(self, method: str, path: str, body: bytes, content_type: str) -> bytes:
        raise NotImplementedError

    def bind(self, pod: Pod) -> None:
        meta = pod["metadata"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": NAMESPACE, "uid": meta["uid"]},
            "target": {"kind": "Node", "name": NODE},
        }
        path = pod_path(NAMESPACE, meta["name"]) + "/binding"
        self.send("POST", path, orjson.dumps(binding), JSON)

    def status(self, pod: Pod, patch: dict[str, Any]) -> None:
        path = pod_path(NAMESPACE, pod["metadata"]["name"]) + "/status"
        self.send("PATCH", path, orjson.dumps(patch), STRATEGIC_MERGE_PATCH)

    def event(self, ev: dict[str, Any]) -> Any:
        return orjson.loads(self.send("POST", events_path(NAMESPACE), orjson.dumps(ev), JSON))

    def close(self) -> None: ...


class Pysched(Client):
    """The scheduler's own stack: KubeApi on RestClient on transport.ConnectionPool."""

    name = "kube-pysched transport"

    def __init__(self, kubeconfig: str) -> None:
        self.rest = RestClient(load_client_config(kubeconfig, qps=-1))
        self.api = KubeApi(self.rest)
        self.parsed: dict[str, Any] = {}  # parsed before measuring: the scheduler holds them

    def bind(self, pod: Pod) -> None:
        self.api.bind(self.parsed[pod["metadata"]["name"]], NODE)

    def status(self, pod: Pod, patch: dict[str, Any]) -> None:
        self.api.patch_pod_status(self.parsed[pod["metadata"]["name"]], patch)

    def event(self, ev: dict[str, Any]) -> Any:
        return self.api.create_event(NAMESPACE, ev)

    def close(self) -> None:
        self.rest.close()


class Urllib3(Client):
    name = "urllib3 PoolManager"

    def __init__(self, server: str, ctx: Any) -> None:
        self.server = server
        self.pool = urllib3.PoolManager(ssl_context=ctx, maxsize=1)

    def send(self, method: str, path: str, body: bytes, content_type: str) -> bytes:
        headers = {**self.headers, "Content-Type": content_type}
        resp = self.pool.request(method, self.server + path, body=body, headers=headers)
        _check(resp.status, f"{method} {path}", resp.data)
        return bytes(resp.data)

    def close(self) -> None:
        self.pool.clear()


class HttpClient(Client):
    name = "http.client"

    def __init__(self, server: str, ctx: Any) -> None:
        host, port = server.removeprefix("https://").rsplit(":", 1)
        self.conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=60)

    def send(self, method: str, path: str, body: bytes, content_type: str) -> bytes:
        headers = {**self.headers, "Content-Type": content_type}
        self.conn.request(method, path, body=body, headers=headers)
        resp = self.conn.getresponse()
        data = resp.read()
        _check(resp.status, f"{method} {path}", data)
        return data

    def close(self) -> None:
        self.conn.close()


#: Per client name, per kind: (CPU seconds, wall seconds) per request, one pair per round.
Results = dict[str, dict[str, list[tuple[float, float]]]]


def create_pods(creator: Client, kubeconfig: str, count: int) -> list[Pod]:
    """The namespace (if new), a kwok node (PodGC deletes pods bound to a missing node) and
    `count` pods, as the API server returned them."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    with contextlib.suppress(RuntimeError):
        creator.send("POST", "/api/v1/namespaces", orjson.dumps(namespace), JSON)
    with contextlib.suppress(Exception):
        create_kwok_node(kubeconfig, NODE)
    print(f"creating {count} pods in {NAMESPACE} ...", file=sys.stderr, flush=True)
    run_id, path = uuid.uuid4().hex[:6], f"/api/v1/namespaces/{NAMESPACE}/pods"
    return [
        orjson.loads(
            creator.send("POST", path, orjson.dumps(pod_manifest(f"p-{run_id}-{i}")), JSON)
        )
        for i in range(count)
    ]


def _calls(c: Client, batch: list[Pod]) -> list[Callable[[], object]]:
    """One call per kind of KINDS, each making its requests for every pod of `batch`."""
    return [
        lambda: [c.bind(p) for p in batch],
        lambda: [c.status(p, status_patch(i)) for i, p in enumerate(batch)],
        lambda: [c.event(event(p)) for p in batch],
    ]


def run(kubeconfig: str, n: int, repeats: int) -> Results:
    config = load_client_config(kubeconfig, qps=-1)
    ctx = ssl_context(config)
    pysched = Pysched(kubeconfig)
    everyone = [pysched, Urllib3(config.server, ctx), HttpClient(config.server, ctx)]
    pods = create_pods(everyone[-1], kubeconfig, n * repeats * len(everyone))
    pysched.parsed = {p["metadata"]["name"]: parse_pod(p) for p in pods}
    for c in everyone:  # connect (TLS handshake) before measuring
        c.status(pods[0], status_patch(0))
    results: Results = {c.name: {k: [] for k in KINDS} for c in everyone}
    at = 0
    for rep in range(repeats):
        shift = rep % len(everyone)
        for c in everyone[shift:] + everyone[:shift]:
            batch, at = pods[at : at + n], at + n
            for kind, call in zip(KINDS, _calls(c, batch), strict=True):
                cpu, wall = time.process_time(), time.perf_counter()
                call()
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                results[c.name][kind].append((cpu / n, wall / n))
            print(f"round {rep + 1}/{repeats}: {c.name} done", file=sys.stderr, flush=True)
    for c in everyone:
        c.close()
    return results


def report(results: Results) -> str:
    head = "| client | " + " | ".join(f"{k} CPU µs | {k} wall µs" for k in KINDS) + " |"
    rows = [head, "|" + "---|" * (1 + 2 * len(KINDS))]
    for name, kinds in results.items():
        cells = [
            f"{statistics.median(x[which] for x in kinds[k]) * 1e6:.0f}"
            for k in KINDS
            for which in (0, 1)
        ]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m e2e.bench.probes.transport", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--requests", type=int, default=200, help="requests per kind and round")
    parser.add_argument("--repeats", type=int, default=5, help="rounds (medians are reported)")
    parser.add_argument("--kubeconfig", help="an existing cluster (else a local one is started)")
    args = parser.parse_args(argv)
    if args.kubeconfig:
        results = run(args.kubeconfig, args.requests, args.repeats)
    else:
        with ControlPlane(with_scheduler=False) as cp:
            cp.start()
            results = run(str(cp.kubeconfig), args.requests, args.repeats)
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
