"""Throughput of the client layer against a real API server (not a test; run by hand).

    .venv/bin/python -m e2e.client.bench_client [--pods 2000] [--threads 1,4,16]

Uses $KUBECONFIG if set, else starts a local control plane. Reports, for binds, status patches
and pod watch events: requests (or events) per second and the CPU time our process spends per
request. Pod creation and deletion are done by a separate process so that their cost is not
counted. Client-side rate limiting is off (qps < 0): this measures the client, not the limit.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.client import KubeApi, RestClient, load_client_config, pod_informer

SCHEDULER = "kube-pysched-bench-nobody"


def _manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "schedulerName": SCHEDULER,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }


def _create_pods(kubeconfig: str, namespace: str, names: list[str], threads: int) -> None:
    """Runs in a child process: creates the pods in parallel."""
    rest = RestClient(load_client_config(kubeconfig, qps=-1))
    path = f"/api/v1/namespaces/{namespace}/pods"
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda n: rest.request_raw("POST", path, body=_body(n)), names))


def _body(name: str) -> bytes:
    import orjson

    return orjson.dumps(_manifest(name))


def _in_child(fn: Callable[..., None], *args: Any) -> None:
    proc = multiprocessing.get_context("spawn").Process(target=fn, args=args)
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"child process failed with {proc.exitcode}")


def _measure(label: str, count: int, threads: int, call: Callable[[int], None]) -> None:
    cpu0, wall0, thread0 = time.process_time(), time.perf_counter(), time.thread_time()
    if threads == 1:
        for i in range(count):
            call(i)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(call, range(count)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    own = f"  (calling thread {(time.thread_time() - thread0) / count * 1e6:.0f} us)"
    print(
        f"{label:<28} threads={threads:<3} {count / wall:8.0f} req/s   "
        f"{cpu / count * 1e6:7.0f} us CPU/req   ({count} in {wall:.2f}s)"
        + (own if threads == 1 else "")
    )


def run(kubeconfig: str, pods: int, thread_counts: list[int]) -> None:
    rest = RestClient(load_client_config(kubeconfig, qps=-1), max_connections=64)
    api = KubeApi(rest)
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    rest.post("/api/v1/namespaces", {"metadata": {"name": namespace}})
    rest.post("/api/v1/nodes", {"metadata": {"name": f"{namespace}-node"}})
    node = f"{namespace}-node"
    try:
        # Watch events: our process only parses; another process creates the pods.
        names = [f"p{i}" for i in range(pods * len(thread_counts))]
        arrived = threading.Event()
        seen: list[Pod] = []

        def transform(raw: dict[str, Any]) -> Pod | None:
            if (raw.get("metadata") or {}).get("namespace") != namespace:
                return None
            return parse_pod(raw)

        thread_cpu: list[float] = []

        def on_add(pod: Pod) -> None:
            seen.append(pod)
            if len(seen) in (1, len(names)):
                thread_cpu.append(time.thread_time())
            if len(seen) == len(names):
                arrived.set()

        informer = pod_informer(rest, transform)
        informer.add_event_handler(on_add)
        informer.start()
        informer.wait_for_sync(60)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        _in_child(_create_pods, kubeconfig, namespace, names, 16)
        if not arrived.wait(120):
            raise RuntimeError(f"only {len(seen)} of {len(names)} pod events arrived")
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        print(
            f"{'watch: pod ADDED + parse_pod':<28} {'':<11} {len(names) / wall:8.0f} ev/s    "
            f"{cpu / len(names) * 1e6:7.0f} us CPU/event in the process, "
            f"{(thread_cpu[1] - thread_cpu[0]) / (len(names) - 1) * 1e6:.0f} us in the informer"
        )
        informer.stop()

        by_round = [seen[i * pods : (i + 1) * pods] for i in range(len(thread_counts))]
        patch = {"status": {"nominatedNodeName": node}}
        for threads, batch in zip(thread_counts, by_round, strict=True):

            def patch_status(i: int, batch: list[Pod] = batch) -> None:
                api.patch_pod_status(batch[i], patch)

            def bind(i: int, batch: list[Pod] = batch) -> None:
                api.bind(batch[i], node)

            _measure("PATCH pods/status", pods, threads, patch_status)
            _measure("POST pods/binding", pods, threads, bind)
    finally:
        rest.delete(f"/api/v1/namespaces/{namespace}")
        rest.delete(f"/api/v1/nodes/{node}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=2000, help="pods per thread setting")
    parser.add_argument("--threads", default="1,4,16")
    args = parser.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",")]
    if os.environ.get("KUBECONFIG"):
        run(os.environ["KUBECONFIG"], args.pods, thread_counts)
        return
    from e2e.cluster import ControlPlane

    with ControlPlane() as cp:
        run(str(Path(cp.kubeconfig)), args.pods, thread_counts)


if __name__ == "__main__":
    main()
