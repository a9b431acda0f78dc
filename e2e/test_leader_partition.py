"""Two kube-pysched replicas with leader election; the leader is cut off from the API server.

The leader reaches the API server through a proxy that stalls every connection (nothing lost,
nothing delivered), as a stalled middlebox would. kube-scheduler's behaviour is the reference:
a leader that cannot renew within renewDeadline stops leading - no bind, status patch or
eviction leaves it any more - and exits, before the standby can take the lease (that takes
leaseDuration). So there is never a moment with two leaders, and when the path comes back the
old leader has nothing left to send.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from kubernetes import client as k8s

from e2e.cluster import wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.faults import PartitionProxy
from e2e.pysched import default_config
from e2e.reliability import log_times
from e2e.test_scheduling import Factory, unique
from e2e.workload import pod_manifest

# Part of the reliability suite (`make reliability`, docs/reliability.md).
pytestmark = pytest.mark.reliability

LEASE = {"leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "1s"}


def _server(kubeconfig: Path) -> str:
    server: str = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    return server


def _via(kubeconfig: Path, port: int, out: Path) -> Path:
    """A copy of `kubeconfig` whose server is the proxy (same certificate name: 127.0.0.1)."""
    doc = yaml.safe_load(kubeconfig.read_text())
    for cluster in doc["clusters"]:
        server = urlsplit(cluster["cluster"]["server"])
        cluster["cluster"]["server"] = f"{server.scheme}://127.0.0.1:{port}"
    out.write_text(yaml.safe_dump(doc))
    return out


def _holder_pid(coordination: k8s.CoordinationV1Api, namespace: str, name: str) -> int | None:
    """The pid in the lease holder's identity (host_pid_thread), None while unheld."""
    try:
        lease = coordination.read_namespaced_lease(name, namespace)
    except k8s.ApiException:
        return None
    holder = lease.spec.holder_identity or ""
    parts = holder.split("_")
    return int(parts[-2]) if len(parts) >= 3 else None


def test_a_partitioned_leader_stops_before_the_standby_leads_and_sends_nothing_after(
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
    tmp_path: Path,
    cluster: Any,
) -> None:
    # Room for every pod the creator makes however long the takeover takes (110 by default).
    kwok_nodes(1, pods=1000, labels={"partition-test": namespace})
    coordination = k8s.CoordinationV1Api(core_v1.api_client)
    lease_name = unique("lease")
    scheduler_name = unique("pysched")
    config = default_config(
        leaderElection={
            "leaderElect": True,
            "resourceNamespace": namespace,
            "resourceName": lease_name,
            **LEASE,
        },
        profiles=[{"schedulerName": scheduler_name}],
    )
    server = urlsplit(_server(Path(cluster.kubeconfig)))
    with PartitionProxy(server.hostname or "127.0.0.1", server.port or 443) as proxy:
        kubeconfig = _via(Path(cluster.kubeconfig), proxy.port, tmp_path / "via-proxy.kubeconfig")
        # -v 2: "successfully bound pod to node" is a V(2) line, as in kube-scheduler.
        old = pysched(config, name="leader", kubeconfig=kubeconfig, extra_args=["-v", "2"])
        assert old.process is not None
        wait_for(
            lambda: _holder_pid(coordination, namespace, lease_name) == old.process.pid,
            timeout=60,
            what="the first replica to lead",
        )
        standby = pysched(config, name="standby")

        stop = threading.Event()
        created: list[str] = []

        def create_pods() -> None:
            while not stop.is_set():
                name = f"p-{uuid.uuid4().hex[:8]}"
                body = pod_manifest(
                    name,
                    scheduler_name=scheduler_name,
                    cpu="1m",
                    memory="1Mi",
                    node_selector={"partition-test": namespace},
                )
                core_v1.create_namespaced_pod(namespace, body)
                created.append(name)
                stop.wait(0.1)

        creator = threading.Thread(target=create_pods, daemon=True)
        creator.start()
        try:
            wait_for(
                lambda: bool(log_times(old, "successfully bound pod to node")),
                timeout=60,
                what="the leader binding pods",
            )
            proxy.partition()
            wait_for(
                lambda: (
                    standby.process is not None
                    and _holder_pid(coordination, namespace, lease_name) == standby.process.pid
                ),
                timeout=60,
                what="the standby to take the lease",
            )
            wait_for(lambda: not old.alive(), timeout=60, what="the old leader to exit")
            proxy.heal()
        finally:
            stop.set()
            creator.join(10)

        assert old.process is not None and old.process.returncode == 1
        fenced = log_times(old, "stopped leading: no more writes from this process")
        acquired = log_times(standby, "successfully acquired lease")
        assert len(fenced) == 1 and len(acquired) == 1
        assert fenced[0] < acquired[0], "two leaders at once"
        assert proxy.bytes_after_heal == 0

        def all_bound() -> bool | str:
            pods = core_v1.list_namespaced_pod(namespace).items
            unbound = [p.metadata.name for p in pods if not p.spec.node_name]
            return not unbound or f"{len(unbound)} of {len(pods)} pods unbound"

        wait_for(all_bound, timeout=60, what="the new leader to bind every pod")
