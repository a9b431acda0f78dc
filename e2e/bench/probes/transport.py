"""HTTP/1.1 clients side by side, making the scheduler's requests: why kube-pysched has its own.

    python -m e2e.bench.probes.transport [--requests N] [--repeats R] [--kubeconfig PATH]

Starts a local control plane (no scheduler; or uses `--kubeconfig`), creates pods in a
namespace of its own, and for each client and request kind measures, on one thread with one
kept-alive connection, the client process's CPU (`time.process_time`) and wall time per request:

* bind: POST pods/binding (a fresh pod each; the target node need not exist),
* status: PATCH pods/status, a strategic merge patch of the PodScheduled condition,
* event: POST an events.k8s.io/v1 Event (the reply decoded, as the recorder's client does),
* get: GET of a pod (decoded),
* watch: a watch of the namespace's pods from resourceVersion 0, per event received (each
  event line decoded with orjson, as the reflector does).

Clients: kube-pysched's RestClient through KubeApi (its transport.py, with its metrics and
retry bookkeeping; client-side rate limiting off), urllib3.PoolManager (what the `kubernetes`
client sends through) and http.client.HTTPSConnection, all with the kubeconfig's CA and client
certificate. Clients take turns round by round; medians are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from e2e.bench.rest import RestClient as CreateClient
from e2e.cluster.nodes import create_kwok_node
from scheduler.api.parse import parse_pod
from scheduler.client.api import KubeApi, events_path, pod_path
from scheduler.client.config import load_client_config
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, RestClient, ssl_context
from scheduler.client.watch import LineSplitter

NAMESPACE = "bench-transport"
NODE = "bench-node-1"
KINDS = ("bind", "status", "event", "get", "watch")
JSON = "application/json"
WATCH_PATH = (
    f"/api/v1/namespaces/{NAMESPACE}/pods?watch=true&resourceVersion=0&allowWatchBookmarks=true"
)
Pod = dict[str, Any]


def pod_manifest(name: str) -> Pod:
    resources = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "bench"}},
        "spec": {"schedulerName": "bench-nobody", "containers": [container]},
    }


def binding(pod: Pod) -> bytes:
    meta = pod["metadata"]
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
            "target": {"kind": "Node", "name": NODE},
        }
    )


def status_patch(i: int) -> dict[str, Any]:
    message = f"0/{1000 + i} nodes are available: insufficient cpu."
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    return {"status": {"conditions": [{**condition, "message": message}]}}


def event(pod: Pod) -> dict[str, Any]:
    meta = pod["metadata"]
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
        "regarding": {
            "kind": "Pod",
            "namespace": NAMESPACE,
            "name": meta["name"],
            "uid": meta["uid"],
            "apiVersion": "v1",
        },
    }


def _check(status: int, what: str, data: bytes = b"") -> None:
    if status >= 300:
        raise RuntimeError(f"{what}: HTTP {status} {data[:200]!r}")


def _decode_watch(chunks: Iterator[bytes], count: int) -> int:
    """Decodes watch events from `chunks` until `count` were seen (or the stream ends)."""
    lines = LineSplitter()
    seen = 0
    for data in chunks:
        for line in lines.feed(data):
            orjson.loads(line)
            seen += 1
        if seen >= count:
            break
    return seen


# --- the clients, each with the same five operations --------------------------------------


class Client:
    """A generic HTTP/1.1 client: subclasses send one request and open one watch."""

    name = ""

    def __init__(self, server: str) -> None:
        self.server = server
        # identity: the wire bytes kube-pysched's transport gets
        self.headers = {"Accept": JSON, "Accept-Encoding": "identity", "User-Agent": NAMESPACE}
        self.json_headers = dict(self.headers, **{"Content-Type": JSON})
        self.smp_headers = dict(self.headers, **{"Content-Type": STRATEGIC_MERGE_PATCH})

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        raise NotImplementedError

    def watch_chunks(self) -> contextlib.AbstractContextManager[Iterator[bytes]]:
        raise NotImplementedError

    def bind(self, pod: Pod) -> None:
        path = pod_path(NAMESPACE, pod["metadata"]["name"]) + "/binding"
        self.send("POST", path, binding(pod), self.json_headers)

    def status(self, pod: Pod, patch: dict[str, Any]) -> None:
        path = pod_path(NAMESPACE, pod["metadata"]["name"]) + "/status"
        self.send("PATCH", path, orjson.dumps(patch), self.smp_headers)

    def event(self, ev: dict[str, Any]) -> Any:
        body = orjson.dumps(ev)
        return orjson.loads(self.send("POST", events_path(NAMESPACE), body, self.json_headers))

    def get(self, name: str) -> Any:
        return orjson.loads(self.send("GET", pod_path(NAMESPACE, name), None, self.headers))

    def watch(self, count: int) -> int:
        with self.watch_chunks() as chunks:
            return _decode_watch(chunks, count)

    def close(self) -> None: ...


class Pysched(Client):
    """The scheduler's own stack: KubeApi on RestClient on transport.ConnectionPool."""

    name = "kube-pysched transport"

    def __init__(self, kubeconfig: str) -> None:
        self.rest = RestClient(load_client_config(kubeconfig, qps=-1))
        self.api = KubeApi(self.rest)
        self._parsed: dict[str, Any] = {}

    def parsed(self, pod: Pod) -> Any:
        """The parsed pod (parsed once, before measuring: the scheduler holds it already)."""
        name = pod["metadata"]["name"]
        if name not in self._parsed:
            self._parsed[name] = parse_pod(pod)
        return self._parsed[name]

    def bind(self, pod: Pod) -> None:
        self.api.bind(self.parsed(pod), NODE)

    def status(self, pod: Pod, patch: dict[str, Any]) -> None:
        self.api.patch_pod_status(self.parsed(pod), patch)

    def event(self, ev: dict[str, Any]) -> Any:
        return self.api.create_event(NAMESPACE, ev)

    def get(self, name: str) -> Any:
        return self.api.get_pod_raw(NAMESPACE, name)

    def watch(self, count: int) -> int:
        query = {"watch": True, "resourceVersion": "0", "allowWatchBookmarks": True}
        stream = self.rest.stream(f"/api/v1/namespaces/{NAMESPACE}/pods", query, read_timeout=60)
        try:
            return _decode_watch(iter(stream.read1, b""), count)
        finally:
            stream.close()

    def close(self) -> None:
        self.rest.close()


class Urllib3(Client):
    name = "urllib3 PoolManager"

    def __init__(self, server: str, ctx: Any) -> None:
        import urllib3

        super().__init__(server)
        self.pool = urllib3.PoolManager(ssl_context=ctx, maxsize=1)

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        resp = self.pool.request(method, self.server + path, body=body, headers=headers)
        _check(resp.status, f"{method} {path}", resp.data)
        return bytes(resp.data)

    @contextlib.contextmanager
    def watch_chunks(self) -> Iterator[Iterator[bytes]]:
        url = self.server + WATCH_PATH
        resp = self.pool.request("GET", url, headers=self.headers, preload_content=False)
        _check(resp.status, "watch")
        try:
            yield iter(resp.read1, b"")
        finally:
            resp.release_conn()
            resp.close()

    def close(self) -> None:
        self.pool.clear()


class HttpClient(Client):
    name = "http.client"

    def __init__(self, server: str, ctx: Any) -> None:
        super().__init__(server)
        host, port = server.removeprefix("https://").rsplit(":", 1)
        self.connect = lambda: http.client.HTTPSConnection(host, int(port), context=ctx, timeout=60)
        self.conn = self.connect()

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        self.conn.request(method, path, body=body, headers=headers)
        resp = self.conn.getresponse()
        data = resp.read()
        _check(resp.status, f"{method} {path}", data)
        return data

    @contextlib.contextmanager
    def watch_chunks(self) -> Iterator[Iterator[bytes]]:
        conn = self.connect()
        conn.request("GET", WATCH_PATH, headers=self.headers)
        resp = conn.getresponse()
        _check(resp.status, "watch")
        try:
            yield iter(lambda: resp.read1(65536), b"")
        finally:
            conn.close()

    def close(self) -> None:
        self.conn.close()


# --- the run --------------------------------------------------------------------------------

#: Per client name, per kind: (CPU seconds, wall seconds) per request, one pair per round.
Results = dict[str, dict[str, list[tuple[float, float]]]]


def clients(kubeconfig: str) -> list[Client]:
    """Every client, sharing one SSLContext."""
    config = load_client_config(kubeconfig, qps=-1)
    ctx = ssl_context(config)
    return [Pysched(kubeconfig), Urllib3(config.server, ctx), HttpClient(config.server, ctx)]


def create_pods(kubeconfig: str, count: int) -> list[Pod]:
    """The namespace, a kwok node and `count` pods (as the API server returned them)."""
    from kubernetes import config as k8s_config

    creator = CreateClient(k8s_config.new_client_from_config(config_file=kubeconfig))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    with contextlib.suppress(Exception):
        creator.create("/api/v1/namespaces", namespace)
    # Pods bound to a node that does not exist are accepted, but PodGC deletes them.
    with contextlib.suppress(Exception):
        create_kwok_node(kubeconfig, NODE)
    print(f"creating {count} pods in {NAMESPACE} ...", file=sys.stderr, flush=True)
    run_id = uuid.uuid4().hex[:6]
    pods: list[Pod] = []
    for i in range(count):
        body = orjson.dumps(pod_manifest(f"p-{run_id}-{i}"))
        status, reply = creator.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
        _check(status, "create pod", reply)
        pods.append(orjson.loads(reply))
    creator.close()
    return pods


def operations(client: Client, batch: list[Pod], watch_count: int) -> list[Callable[[], int]]:
    """One callable per kind of KINDS, each making its requests and returning how many."""
    patches = [status_patch(i) for i in range(len(batch))]
    events = [event(p) for p in batch]

    def each(fn: Callable[[Any], object], items: list[Any]) -> Callable[[], int]:
        return lambda: len([fn(x) for x in items])

    return [
        each(client.bind, batch),
        each(lambda pair: client.status(*pair), list(zip(batch, patches, strict=True))),
        each(client.event, events),
        each(client.get, [p["metadata"]["name"] for p in batch]),
        lambda: client.watch(watch_count),
    ]


def run(kubeconfig: str, n: int, repeats: int, watch_events: int) -> Results:
    everyone = clients(kubeconfig)
    total = n * repeats * len(everyone)
    pods = create_pods(kubeconfig, total)
    for c in everyone:
        if isinstance(c, Pysched):
            for pod in pods:
                c.parsed(pod)
        c.get(pods[0]["metadata"]["name"])  # connect (TLS handshake) before measuring
    results: Results = {c.name: {k: [] for k in KINDS} for c in everyone}
    at = 0
    for rep in range(repeats):
        shift = rep % len(everyone)
        for c in everyone[shift:] + everyone[:shift]:
            batch, at = pods[at : at + n], at + n
            for kind, fn in zip(KINDS, operations(c, batch, min(watch_events, total)), strict=True):
                cpu, wall = time.process_time(), time.perf_counter()
                ops = fn()
                if ops == 0:
                    raise RuntimeError(f"{c.name} {kind}: no operations")
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                results[c.name][kind].append((cpu / ops, wall / ops))
            print(f"round {rep + 1}/{repeats}: {c.name} done", file=sys.stderr, flush=True)
    for c in everyone:
        c.close()
    return results


def report(results: Results) -> str:
    head = "| client | " + " | ".join(f"{k} CPU µs | {k} wall µs" for k in KINDS) + " |"
    rows = [head, "|" + "---|" * (1 + 2 * len(KINDS))]
    for name, kinds in results.items():
        cells = []
        for k in KINDS:
            cells.append(f"{statistics.median(x[0] for x in kinds[k]) * 1e6:.0f}")
            cells.append(f"{statistics.median(x[1] for x in kinds[k]) * 1e6:.0f}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _uptime() -> str:
    return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m e2e.bench.probes.transport", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--requests", type=int, default=200, help="requests per kind and round")
    parser.add_argument("--repeats", type=int, default=5, help="rounds (medians are reported)")
    parser.add_argument("--watch-events", type=int, default=2000, help="events per watch")
    parser.add_argument("--kubeconfig", help="an existing cluster (else a local one is started)")
    args = parser.parse_args(argv)
    print("uptime before:", _uptime())
    if args.kubeconfig:
        results = run(args.kubeconfig, args.requests, args.repeats, args.watch_events)
    else:
        from e2e.cluster.controlplane import ControlPlane

        with ControlPlane(with_scheduler=False) as cp:
            cp.start()
            results = run(str(cp.kubeconfig), args.requests, args.repeats, args.watch_events)
    print("uptime after:", _uptime())
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}")
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
