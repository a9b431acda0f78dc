"""SIGTERM with the API server gone: the process exits within its documented bound.

kube-pysched reaches the API server through `e2e/faults.py`'s PartitionProxy, leads a Lease and
binds a stream of pods; then the path is cut while bindings, status patches and Events are in
flight, in one of two ways: "stalled" (connections hang, new ones too: calls wait for their
timeouts) and "stopped" (the proxy is closed: connections reset, new ones refused, as when
kube-apiserver's process is gone). SIGTERM follows. The process must exit within
SHUTDOWN_BOUND seconds (docs/operations.md: the bound and how it is enforced), dropping the
Events it could not send with one log line, not one line per Event or retry.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from kubernetes import client as k8s

from e2e.cluster import wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.faults import PartitionProxy
from e2e.pysched import default_config, metric_value
from e2e.test_leader_partition import _server, _via
from e2e.test_scheduling import Factory, unique
from e2e.workload import pod_manifest

pytestmark = pytest.mark.reliability

#: The documented bound: SIGTERM to exit, whatever the API server does (docs/operations.md).
SHUTDOWN_BOUND = 10.0
DROP_LINE = "dropping unsent events at shutdown"


def _records(path: Path) -> list[dict[str, Any]]:
    records = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


@pytest.mark.parametrize("cut", ["stalled", "stopped"])
def test_sigterm_with_the_api_server_gone_exits_within_the_bound(
    cut: str,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
    tmp_path: Path,
    cluster: Any,
) -> None:
    kwok_nodes(1, pods=1000, labels={"shutdown-test": namespace})
    scheduler_name = unique("pysched")
    config = default_config(
        leaderElection={
            "leaderElect": True,
            "resourceNamespace": namespace,
            "resourceName": unique("lease"),
        },
        profiles=[{"schedulerName": scheduler_name}],
    )
    server = urlsplit(_server(Path(cluster.kubeconfig)))
    with PartitionProxy(server.hostname or "127.0.0.1", server.port or 443) as proxy:
        kubeconfig = _via(Path(cluster.kubeconfig), proxy.port, tmp_path / "via-proxy.kubeconfig")
        proc = pysched(config, name=f"shutdown-{cut}", kubeconfig=kubeconfig)
        assert proc.process is not None
        stop = threading.Event()

        def create_pods() -> None:
            while not stop.is_set():
                body = pod_manifest(
                    f"p-{uuid.uuid4().hex[:8]}",
                    scheduler_name=scheduler_name,
                    cpu="1m",
                    memory="1Mi",
                    node_selector={"shutdown-test": namespace},
                )
                core_v1.create_namespaced_pod(namespace, body)
                stop.wait(0.02)

        creator = threading.Thread(target=create_pods, daemon=True)
        creator.start()
        try:

            def binding() -> bool | str:
                labels = {"profile": scheduler_name, "result": "scheduled"}
                done = metric_value(proc.metrics(), "scheduler_schedule_attempts_total", labels)
                return (done or 0) >= 20 or f"{done} bound"

            wait_for(binding, timeout=60, what="20 pods bound through the proxy")
            if cut == "stalled":
                proxy.partition()
            else:
                proxy.close()
            signalled = time.monotonic()
            os.kill(proc.process.pid, signal.SIGTERM)
            # The deadline is the behaviour under test: the documented bound.
            wait_for(lambda: not proc.alive(), timeout=SHUTDOWN_BOUND, what="exit after SIGTERM")
            took = time.monotonic() - signalled
        finally:
            stop.set()
            creator.join(10)
    records = _records(proc.log_path)
    terminated = next(
        i for i, r in enumerate(records) if r.get("event") == "received signal, shutting down"
    )
    after = [r["event"] for r in records[terminated:]]
    print(f"{cut}: exited {took:.2f} s after SIGTERM; log after it: {after}")
    assert proc.process.returncode == 0, proc.tail(40)
    assert after.count(DROP_LINE) <= 1
    assert "unable to write event (will retry)" not in after, after
    if cut == "stalled":
        # The partition keeps every watch open, so a watch that ends now was cut by the
        # shutdown itself, which is not reported as a short watch. (Closing the proxy cuts the
        # watches at the same moment as the signal, so their short-watch lines may follow it.)
        assert "very short watch" not in after, after
