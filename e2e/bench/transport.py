"""HTTP clients side by side, making the scheduler's requests (issue 16, part 4).

``python -m e2e.bench.transport [--requests N] [--repeats R] [--kubeconfig PATH]``

Starts a local control plane (no scheduler; or uses `--kubeconfig`), creates pods in a
namespace of its own, and for each client and request kind measures, on one thread with one
kept-alive connection, the client process's CPU (`time.process_time`) and wall time for N
requests:

* bind: POST pods/binding (a fresh pod each; the target node need not exist),
* status: PATCH pods/status, a strategic merge patch of the PodScheduled condition,
* event: POST an events.k8s.io/v1 Event (the reply decoded, as the recorder's client does),
* get: GET of a pod (decoded),
* watch: a watch of the namespace's pods from resourceVersion 0, per event received (each
  event line decoded with orjson, as the reflector does).

Clients: kube-pysched's RestClient through KubeApi (its transport.py, with its metrics and
retry bookkeeping; client-side rate limiting off), urllib3.PoolManager, httpx.Client (HTTP/1.1,
and HTTP/2 with the h2 package, if installed) and http.client.HTTPSConnection, all with the
kubeconfig's CA and client certificate (one SSLContext; the HTTP/2 clients get their own), and
the h2 package's state machine on a bare TLS socket, the least any HTTP/2 client in Python
costs. Requests alternate between clients round by round; medians are printed.
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
from pathlib import Path
from typing import Any

import orjson

from e2e.bench.rest import RestClient as CreateClient
from e2e.cluster.nodes import create_kwok_node
from scheduler.api.parse import parse_pod
from scheduler.client.api import KubeApi, events_path, pod_path
from scheduler.client.config import load_client_config
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, RestClient, _ssl_context

NAMESPACE = "bench-transport"
NODE = "bench-node-1"
KINDS = ("bind", "status", "event", "get", "watch")
JSON = "application/json"


def pod_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "bench"}},
        "spec": {
            "schedulerName": "bench-nobody",
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }


def binding(pod: dict[str, Any], node: str) -> bytes:
    meta = pod["metadata"]
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
            "target": {"kind": "Node", "name": node},
        }
    )


def status_patch(i: int) -> dict[str, Any]:
    return {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": f"0/{1000 + i} nodes are available: insufficient cpu.",
                }
            ]
        }
    }


def event(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": NAMESPACE},
        "eventTime": now,
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


# --- the clients, each with the same five operations --------------------------------------


class Client:
    name = ""

    def bind(self, pod: dict[str, Any], body: bytes) -> None: ...
    def status(self, pod: dict[str, Any], patch: dict[str, Any]) -> None: ...
    def event(self, ev: dict[str, Any]) -> Any: ...
    def get(self, name: str) -> Any: ...
    def watch(self, count: int) -> int: ...
    def close(self) -> None: ...


def _check(status: int, what: str, data: bytes = b"") -> None:
    if status >= 300:
        raise RuntimeError(f"{what}: HTTP {status} {data[:200]!r}")


class Pysched(Client):
    """The scheduler's own stack: KubeApi on RestClient on transport.ConnectionPool."""

    name = "kube-pysched transport"

    def __init__(self, kubeconfig: str) -> None:
        self.rest = RestClient(load_client_config(kubeconfig, qps=-1))
        self.api = KubeApi(self.rest)
        self._pods: dict[str, Any] = {}

    def _pod(self, pod: dict[str, Any]) -> Any:
        name = pod["metadata"]["name"]
        parsed = self._pods.get(name)
        if parsed is None:
            parsed = self._pods[name] = parse_pod(pod)
        return parsed

    def prepare(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            self._pod(pod)

    def bind(self, pod: dict[str, Any], body: bytes) -> None:
        self.api.bind(self._pod(pod), NODE)

    def status(self, pod: dict[str, Any], patch: dict[str, Any]) -> None:
        self.api.patch_pod_status(self._pod(pod), patch)

    def event(self, ev: dict[str, Any]) -> Any:
        return self.api.create_event(NAMESPACE, ev)

    def get(self, name: str) -> Any:
        return self.api.get_pod_raw(NAMESPACE, name)

    def watch(self, count: int) -> int:
        from scheduler.client.watch import LineSplitter

        stream = self.rest.stream(
            f"/api/v1/namespaces/{NAMESPACE}/pods",
            {"watch": True, "resourceVersion": "0", "allowWatchBookmarks": True},
            read_timeout=60,
        )
        lines = LineSplitter()
        seen = 0
        try:
            while seen < count:
                data = stream.read1()
                if not data:
                    break
                for line in lines.feed(data):
                    orjson.loads(line)
                    seen += 1
        finally:
            stream.close()
        return seen

    def close(self) -> None:
        self.rest.close()


def _host_port(server: str) -> tuple[str, str]:
    """Host and port of an https:// server URL."""
    host, port = server.removeprefix("https://").rsplit(":", 1)
    return host, port


class _Base(Client):
    def __init__(self, server: str, ctx: Any) -> None:
        self.server = server
        self.ctx = ctx
        # identity: the wire bytes kube-pysched's transport gets (httpx asks for gzip otherwise)
        self.headers = {
            "Accept": JSON,
            "Accept-Encoding": "identity",
            "User-Agent": "bench-transport",
        }
        self.json_headers = dict(self.headers, **{"Content-Type": JSON})
        self.smp_headers = dict(self.headers, **{"Content-Type": STRATEGIC_MERGE_PATCH})

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        raise NotImplementedError

    def bind(self, pod: dict[str, Any], body: bytes) -> None:
        path = pod_path(NAMESPACE, pod["metadata"]["name"]) + "/binding"
        self.send("POST", path, body, self.json_headers)

    def status(self, pod: dict[str, Any], patch: dict[str, Any]) -> None:
        path = pod_path(NAMESPACE, pod["metadata"]["name"]) + "/status"
        self.send("PATCH", path, orjson.dumps(patch), self.smp_headers)

    def event(self, ev: dict[str, Any]) -> Any:
        return orjson.loads(
            self.send("POST", events_path(NAMESPACE), orjson.dumps(ev), self.json_headers)
        )

    def get(self, name: str) -> Any:
        return orjson.loads(self.send("GET", pod_path(NAMESPACE, name), None, self.headers))

    def watch_chunks(self) -> contextlib.AbstractContextManager[Iterator[bytes]]:
        raise NotImplementedError

    def watch(self, count: int) -> int:
        from scheduler.client.watch import LineSplitter

        lines = LineSplitter()
        seen = 0
        with self.watch_chunks() as chunks:
            for data in chunks:
                for line in lines.feed(data):
                    orjson.loads(line)
                    seen += 1
                if seen >= count:
                    break
        return seen


WATCH_PATH = (
    f"/api/v1/namespaces/{NAMESPACE}/pods?watch=true&resourceVersion=0&allowWatchBookmarks=true"
)


class Urllib3(_Base):
    name = "urllib3 PoolManager"

    def __init__(self, server: str, ctx: Any) -> None:
        import urllib3

        super().__init__(server, ctx)
        self.pool = urllib3.PoolManager(ssl_context=ctx, maxsize=1)
        self.urllib3 = urllib3

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        resp = self.pool.request(method, self.server + path, body=body, headers=headers)
        _check(resp.status, f"{method} {path}", resp.data)
        return bytes(resp.data)

    @contextlib.contextmanager
    def watch_chunks(self) -> Iterator[Iterator[bytes]]:
        resp = self.pool.request(
            "GET", self.server + WATCH_PATH, headers=self.headers, preload_content=False
        )
        _check(resp.status, "watch")
        try:
            yield iter(resp.read1, b"")
        finally:
            resp.release_conn()
            resp.close()

    def close(self) -> None:
        self.pool.clear()


class Httpx(_Base):
    name = "httpx Client (HTTP/1.1)"
    http2 = False

    def __init__(self, server: str, ctx: Any) -> None:
        import httpx

        super().__init__(server, ctx)
        self.client = httpx.Client(
            base_url=server, verify=ctx, http1=not self.http2, http2=self.http2
        )

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        resp = self.client.request(method, path, content=body, headers=headers)
        _check(resp.status_code, f"{method} {path}", resp.content)
        if self.http2 and resp.http_version != "HTTP/2":
            raise RuntimeError(f"{self.name}: answered in {resp.http_version}")
        return resp.content

    @contextlib.contextmanager
    def watch_chunks(self) -> Iterator[Iterator[bytes]]:
        with self.client.stream("GET", WATCH_PATH, headers=self.headers) as resp:
            _check(resp.status_code, "watch")
            yield resp.iter_raw()

    def close(self) -> None:
        self.client.close()


class HttpxHttp2(Httpx):
    """httpx over HTTP/2 (the h2 package), as kube-scheduler's client-go talks to the API server.

    Its SSLContext must be its own: httpcore sets the context's ALPN protocols to offer h2, which
    would make the API server answer the HTTP/1.1-only clients' connections in HTTP/2.
    """

    name = "httpx Client (HTTP/2)"
    http2 = True


class H2Direct(_Base):
    """The h2 state machine on one TLS socket, with nothing around it: what any HTTP/2 client
    written in Python costs at least (as transport.py is for HTTP/1.1)."""

    name = "h2 on a socket (HTTP/2)"

    def __init__(self, server: str, ctx: Any) -> None:
        import socket

        import h2.config
        import h2.connection

        super().__init__(server, ctx)
        host, port = _host_port(server)
        ctx.set_alpn_protocols(["h2"])
        self.sock = ctx.wrap_socket(
            socket.create_connection((host, int(port)), timeout=60), server_hostname=host
        )
        if self.sock.selected_alpn_protocol() != "h2":
            raise RuntimeError(f"{self.name}: the server did not agree to h2")
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.authority = f"{host}:{port}".encode()

    def _start(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> int:
        stream = int(self.conn.get_next_available_stream_id())
        fields = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", self.authority),
            (b":path", path.encode()),
        ]
        fields += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        self.conn.send_headers(stream, fields, end_stream=body is None)
        if body is not None:
            self.conn.send_data(stream, body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        return stream

    def _events(self, stream: int) -> Iterator[Any]:
        """The stream's events as the socket delivers them; flow-control credit returned."""
        import h2.events

        while True:
            data = self.sock.recv(65536)
            if not data:
                raise RuntimeError(f"{self.name}: connection closed")
            for ev in self.conn.receive_data(data):
                if isinstance(ev, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                if getattr(ev, "stream_id", None) == stream:
                    yield ev
            out = self.conn.data_to_send()
            if out:
                self.sock.sendall(out)

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        import h2.events

        stream = self._start(method, path, body, headers)
        status, chunks = 0, []
        for ev in self._events(stream):
            if isinstance(ev, h2.events.ResponseReceived):
                status = int(dict(ev.headers)[b":status"])
            elif isinstance(ev, h2.events.DataReceived):
                chunks.append(ev.data)
            elif isinstance(ev, h2.events.StreamEnded | h2.events.StreamReset):
                break
        data = b"".join(chunks)
        _check(status, f"{method} {path}", data)
        return data

    @contextlib.contextmanager
    def watch_chunks(self) -> Iterator[Iterator[bytes]]:
        import h2.events

        stream = self._start("GET", WATCH_PATH, None, self.headers)
        data = (ev.data for ev in self._events(stream) if isinstance(ev, h2.events.DataReceived))
        try:
            yield data
        finally:
            self.conn.reset_stream(stream)
            self.sock.sendall(self.conn.data_to_send())

    def close(self) -> None:
        self.conn.close_connection()
        with contextlib.suppress(OSError):
            self.sock.sendall(self.conn.data_to_send())
        self.sock.close()


class HttpClient(_Base):
    name = "http.client"

    def __init__(self, server: str, ctx: Any) -> None:
        super().__init__(server, ctx)
        host, port = _host_port(server)
        self.host, self.port = host, int(port)
        self.conn = http.client.HTTPSConnection(self.host, self.port, context=ctx, timeout=60)

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        self.conn.request(method, path, body=body, headers=headers)
        resp = self.conn.getresponse()
        data = resp.read()
        _check(resp.status, f"{method} {path}", data)
        return data

    @contextlib.contextmanager
    def watch_chunks(self) -> Iterator[Iterator[bytes]]:
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
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


def timed(fn: Callable[[], int]) -> tuple[float, float, int]:
    """(cpu seconds, wall seconds, operations) of fn."""
    c0, w0 = time.process_time(), time.perf_counter()
    ops = fn()
    return time.process_time() - c0, time.perf_counter() - w0, ops


def run(
    kubeconfig: str, n: int, repeats: int, watch_events: int
) -> dict[str, dict[str, list[tuple[float, float]]]]:
    config = load_client_config(kubeconfig, qps=-1)
    ctx = _ssl_context(config)
    clients: list[Client] = [Pysched(kubeconfig), Urllib3(config.server, ctx)]
    try:
        clients.append(Httpx(config.server, ctx))
    except ImportError:
        print("httpx not installed: skipped", file=sys.stderr)
    try:
        clients.append(HttpxHttp2(config.server, _ssl_context(config)))
    except ImportError:
        print("httpx or h2 not installed: HTTP/2 skipped", file=sys.stderr)
    try:
        clients.append(H2Direct(config.server, _ssl_context(config)))
    except ImportError:
        print("h2 not installed: h2 on a socket skipped", file=sys.stderr)
    clients.append(HttpClient(config.server, ctx))

    from kubernetes import config as k8s_config

    creator = CreateClient(k8s_config.new_client_from_config(config_file=kubeconfig))
    with contextlib.suppress(Exception):
        creator.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
    # Pods bound to a node that does not exist are accepted, but PodGC deletes them.
    with contextlib.suppress(Exception):
        create_kwok_node(kubeconfig, NODE)
    total = n * repeats * len(clients)
    print(f"creating {total} pods in {NAMESPACE} ...", file=sys.stderr, flush=True)
    pods: list[dict[str, Any]] = []
    run_id = uuid.uuid4().hex[:6]
    for i in range(total):
        manifest = pod_manifest(f"p-{run_id}-{i}")
        body = orjson.dumps(manifest)
        status, reply = creator.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
        _check(status, "create pod", reply)
        pods.append(orjson.loads(reply))
    creator.close()
    for c in clients:
        if isinstance(c, Pysched):
            c.prepare(pods)
        c.get(pods[0]["metadata"]["name"])  # connect (TLS handshake) before measuring

    results: dict[str, dict[str, list[tuple[float, float]]]] = {
        c.name: {k: [] for k in KINDS} for c in clients
    }
    watch_count = min(watch_events, total)
    at = 0
    for rep in range(repeats):
        order = clients[rep % len(clients) :] + clients[: rep % len(clients)]
        for c in order:
            batch = pods[at : at + n]
            at += n
            bodies = [binding(p, NODE) for p in batch]
            patches = [status_patch(i) for i in range(n)]
            events = [event(p) for p in batch]
            names = [p["metadata"]["name"] for p in batch]

            def bind(c: Client = c, batch: list[Any] = batch, bodies: list[bytes] = bodies) -> int:
                for p, b in zip(batch, bodies, strict=True):
                    c.bind(p, b)
                return len(batch)

            def status(
                c: Client = c, batch: list[Any] = batch, patches: list[Any] = patches
            ) -> int:
                for p, patch in zip(batch, patches, strict=True):
                    c.status(p, patch)
                return len(batch)

            def ev(c: Client = c, events: list[Any] = events) -> int:
                for e in events:
                    c.event(e)
                return len(events)

            def get(c: Client = c, names: list[str] = names) -> int:
                for name in names:
                    c.get(name)
                return len(names)

            def watch(c: Client = c) -> int:
                return c.watch(watch_count)

            for kind, fn in zip(KINDS, (bind, status, ev, get, watch), strict=True):
                cpu, wall, ops = timed(fn)
                if ops == 0:
                    raise RuntimeError(f"{c.name} {kind}: no operations")
                results[c.name][kind].append((cpu / ops, wall / ops))
            print(f"round {rep + 1}/{repeats}: {c.name} done", file=sys.stderr, flush=True)
    for c in clients:
        c.close()
    return results


def report(results: dict[str, dict[str, list[tuple[float, float]]]]) -> str:
    head = "| client | " + " | ".join(f"{k} CPU µs | {k} wall µs" for k in KINDS) + " |"
    rows = [head, "|" + "---|" * (1 + 2 * len(KINDS))]
    for name, kinds in results.items():
        cells = []
        for k in KINDS:
            cpu = statistics.median(x[0] for x in kinds[k]) * 1e6
            wall = statistics.median(x[1] for x in kinds[k]) * 1e6
            cells += [f"{cpu:.0f}", f"{wall:.0f}"]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _uptime() -> str:
    return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.bench.transport", description=__doc__)
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
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}, {Path.cwd().name}")
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
