"""What the scheduler's requests cost the API server, by client (issue 16).

``python -m e2e.bench.server_cost [--requests N] [--rounds R] [--kubeconfig PATH]``

In the benchmark the API server spent more CPU per measured pod in kube-pysched's windows than
in kube-scheduler's. This run isolates the clients: on a local control plane (no scheduler;
or `--kubeconfig`) it creates pods, then each client in turn makes N requests
of one kind on one connection while kube-apiserver's CPU (/proc) is read before and after:

* bind: POST pods/binding to a Node object no kwok manages (so nothing follows a binding),
* event: POST an events.k8s.io/v1 Event (the recorder's Scheduled event),
* get: GET of a pod.

Clients: kube-pysched's KubeApi as the scheduler uses it (HTTP/1.1, JSON), the same with its
Events in protobuf (e2e.bench.protobuf), and client-go (HTTP/2) with protobuf bodies
(kube-scheduler's configuration) and with JSON (the `servercost` command next to this file,
built once into the cache with the Go toolchain). The API server's idle CPU per second,
measured first, is subtracted. Rounds rotate the clients' order; printed are the medians per
request and, per round, each client's difference from kube-pysched's (mean ± standard error:
the pairing removes the drift between rounds).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import orjson

from e2e.bench.measure import process_usage
from e2e.bench.protobuf import PROTOBUF, encode_event
from e2e.bench.rest import RestClient as CreateClient
from e2e.bench.transport import event as scheduled_event
from e2e.cluster.build import _go, _go_env, _locked, _run, cache_root
from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.client.api import KubeApi, events_path
from scheduler.client.config import load_client_config
from scheduler.client.rest import RestClient

NAMESPACE = "bench-transport"
NODE = "bench-unmanaged-node"
KINDS = ("bind", "event", "get")
JSON = "application/json"
GO_SOURCE = Path(__file__).parent / "servercost"


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    return process_usage(pid).cpu_seconds


def pod_manifest(name: str) -> dict[str, Any]:
    """A pod no scheduler picks up, tolerating the taints its unmanaged node will get."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "schedulerName": "bench-nobody",
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def build_go_client(out: IO[str] = sys.stderr) -> Path:
    """The `servercost` command, built once per source into the cache (log next to it)."""
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((GO_SOURCE / name).read_bytes())
    bdir = cache_root() / "servercost" / digest.hexdigest()[:16]
    binary = bdir / "servercost"
    bdir.mkdir(parents=True, exist_ok=True)
    with _locked(bdir / ".lock"):
        if not binary.exists():
            print(f"building {binary} ...", file=out, flush=True)
            env = dict(_go_env(), GOFLAGS="-mod=readonly")
            _run([_go(), "build", "-o", str(binary), "."], GO_SOURCE, bdir / "build.log", out, env)
    return binary


class PyschedClient:
    """kube-pysched's KubeApi; `protobuf_events` sends its Events in protobuf instead."""

    def __init__(self, kubeconfig: str, protobuf_events: bool) -> None:
        self.name = "kube-pysched" + (", protobuf Events" if protobuf_events else "")
        self.rest = RestClient(load_client_config(kubeconfig, qps=-1))
        self.api = KubeApi(self.rest)
        self.protobuf_events = protobuf_events
        self.pods: list[Pod] = []
        self.manifests: list[dict[str, Any]] = []

    def pid(self) -> int:
        return os.getpid()

    def run(self, kind: str, first: int, count: int) -> None:
        for i in range(first, first + count):
            pod = self.pods[i]
            if kind == "bind":
                self.api.bind(pod, NODE)
            elif kind == "event":
                event = scheduled_event(self.manifests[i])
                if self.protobuf_events:
                    body = encode_event(event)
                    path = events_path(NAMESPACE)
                    self.rest.request_raw("POST", path, body=body, content_type=PROTOBUF)
                else:
                    self.api.create_event(NAMESPACE, event)
            else:
                self.api.get_pod_raw(NAMESPACE, pod.name)

    def close(self) -> None:
        self.rest.close()


class GoClient:
    """client-go in the `servercost` process, driven over its stdin."""

    def __init__(self, binary: Path, kubeconfig: str, podfile: Path, content_type: str) -> None:
        self.name = "client-go, " + ("protobuf" if content_type == PROTOBUF else "JSON")
        self.proc = subprocess.Popen(
            [
                str(binary),
                f"-kubeconfig={kubeconfig}",
                f"-pods={podfile}",
                f"-namespace={NAMESPACE}",
                f"-node={NODE}",
                f"-content-type={content_type}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._expect("ready")

    def _expect(self, line: str) -> None:
        assert self.proc.stdout is not None
        got = self.proc.stdout.readline().strip()
        if got != line:
            self.proc.kill()
            raise RuntimeError(f"{self.name}: expected {line!r}, got {got!r} (see its stderr)")

    def pid(self) -> int:
        return self.proc.pid

    def run(self, kind: str, first: int, count: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{kind} {first} {count}\n")
        self._expect(f"ok {count}")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


Client = PyschedClient | GoClient
#: client -> kind -> per round (API server ms, client ms, wall ms) per request
Results = dict[str, dict[str, list[tuple[float, float, float]]]]


def _create_pods(creator: CreateClient, total: int) -> list[dict[str, Any]]:
    run_id = uuid.uuid4().hex[:6]

    def create(i: int) -> dict[str, Any]:
        body = orjson.dumps(pod_manifest(f"cost-{run_id}-{i}"))
        status, reply = creator.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
        if status >= 300:
            raise RuntimeError(f"create pod: HTTP {status} {reply[:200]!r}")
        created: dict[str, Any] = orjson.loads(reply)
        return created

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(create, range(total)))


def idle_rate(apiserver: int, seconds: float = 10.0) -> float:
    """The API server's CPU seconds per second with no client of ours busy."""
    c0, w0 = process_cpu(apiserver), time.perf_counter()
    time.sleep(seconds)
    return (process_cpu(apiserver) - c0) / (time.perf_counter() - w0)


def measure(clients: Sequence[Client], apiserver: int, n: int, rounds: int, idle: float) -> Results:
    results: Results = {c.name: {k: [] for k in KINDS} for c in clients}
    at = 0
    for r in range(rounds):
        order = [*clients[r % len(clients) :], *clients[: r % len(clients)]]
        for client in order:
            for kind in KINDS:
                a0, c0 = process_cpu(apiserver), process_cpu(client.pid())
                w0 = time.perf_counter()
                client.run(kind, at, n)
                wall = time.perf_counter() - w0
                server = process_cpu(apiserver) - a0 - idle * wall
                used = process_cpu(client.pid()) - c0
                results[client.name][kind].append(
                    (server * 1e3 / n, used * 1e3 / n, wall * 1e3 / n)
                )
            at += n
        print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    return results


def report(results: Results) -> str:
    """Medians per request in ms, then each client's per-round difference from the first's."""
    head = "| client | " + " | ".join(
        f"{k}: kube-apiserver | {k}: client | {k}: wall" for k in KINDS
    )
    rows = [head + " |", "| --- |" + " ---: |" * (3 * len(KINDS))]
    for name, kinds in results.items():
        cells = [
            f"{statistics.median(x[j] for x in kinds[k]):.3f}" for k in KINDS for j in range(3)
        ]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    names = list(results)
    rows += ["", f"kube-apiserver ms per request, minus {names[0]}'s in the same round:"]
    rows += ["| client | " + " | ".join(KINDS) + " |", "| --- |" + " ---: |" * len(KINDS)]
    for name in names[1:]:
        cells = []
        for k in KINDS:
            diffs = [
                x[0] - y[0] for x, y in zip(results[name][k], results[names[0]][k], strict=True)
            ]
            sem = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
            cells.append(f"{statistics.mean(diffs):+.3f} ± {sem:.3f}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def run(kubeconfig: str, apiserver: int, n: int, rounds: int, workdir: Path) -> Results:
    from kubernetes import config as k8s_config

    binary = build_go_client()
    creator = CreateClient(k8s_config.new_client_from_config(config_file=kubeconfig))
    for path, obj in (
        ("/api/v1/namespaces", {"kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        ("/api/v1/nodes", {"kind": "Node", "metadata": {"name": NODE}}),
    ):
        creator.create(path, {"apiVersion": "v1", **obj})  # a 409 (an earlier run's) is fine
    pyscheds = [PyschedClient(kubeconfig, protobuf_events=p) for p in (False, True)]
    total = n * rounds * (len(pyscheds) + 2)
    print(f"creating {total} pods in {NAMESPACE} ...", file=sys.stderr, flush=True)
    manifests = _create_pods(creator, total)
    creator.close()
    pods = [parse_pod(m) for m in manifests]
    podfile = workdir / "servercost-pods.txt"
    podfile.write_text("".join(f"{p.name} {p.uid}\n" for p in pods))
    for client in pyscheds:
        client.pods, client.manifests = pods, manifests
        client.run("get", 0, 1)  # connect before measuring
    clients: list[Client] = [*pyscheds]
    with contextlib.ExitStack() as stack:
        for content_type in (PROTOBUF, JSON):
            go = GoClient(binary, kubeconfig, podfile, content_type)
            stack.callback(go.close)
            clients.append(go)
        idle = idle_rate(apiserver)
        print(f"kube-apiserver idle: {idle * 1e3:.1f} ms of CPU per second", flush=True)
        results = measure(clients, apiserver, n, rounds, idle)
    for client in pyscheds:
        client.close()
    return results


@contextlib.contextmanager
def _cluster(kubeconfig: str | None, pid: int | None) -> Iterator[tuple[str, int]]:
    if kubeconfig:
        if pid is None:
            raise SystemExit("--kubeconfig needs --apiserver-pid (its CPU is what is measured)")
        yield kubeconfig, pid
        return
    from e2e.cluster.controlplane import ControlPlane

    with ControlPlane(with_scheduler=False) as cp:
        cp.start()
        yield str(cp.kubeconfig), cp.pid("kube-apiserver")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.bench.server_cost", description=__doc__)
    parser.add_argument("--requests", type=int, default=500, help="requests per batch")
    parser.add_argument("--rounds", type=int, default=16, help="rounds (medians are reported)")
    parser.add_argument("--kubeconfig", help="an existing cluster (else a local one is started)")
    parser.add_argument("--apiserver-pid", type=int, help="kube-apiserver's pid (--kubeconfig)")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.rounds < 1:
        parser.error("--requests and --rounds must be 1 or more")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average before: {load}")
    with _cluster(args.kubeconfig, args.apiserver_pid) as (kubeconfig, apiserver):
        workdir = Path(kubeconfig).parent
        results = run(kubeconfig, apiserver, args.requests, args.rounds, workdir)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average after: {load}")
    print(f"{args.requests} requests per batch, {args.rounds} rounds; medians, ms per request")
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
