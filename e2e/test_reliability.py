"""Fault tests of the reliability suite; the short ones, also run by `make e2e`.

* the leader is SIGKILLed mid-burst and the standby takes over;
* kube-apiserver is stopped and restarted while pods are pending and being bound;
* etcd is compacted while the scheduler is cut off, so every watch ends in 410 Gone and every
  informer relists a state that changed behind its back.

The partition scenario is test_leader_partition.py (marked `reliability` there), the churn soak
test_reliability_soak.py (`reliability_long`). Timings are figures (record_figures), never
asserted; every wait polls with a deadline.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import urllib3
from kubernetes import client as k8s

from e2e.cluster import wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.faults import PartitionProxy
from e2e.pysched import default_config
from e2e.reliability import (
    INFORMERS,
    bound_pods,
    cache_matches_api,
    compact_etcd,
    etcd_revision,
    log_times,
    record_figures,
    relists_since,
    scheduled,
)
from e2e.test_leader_partition import LEASE, _holder_pid, _server, _via
from e2e.test_scheduling import (
    Factory,
    assert_no_overcommit,
    pods_by_name,
    profile_config,
    unique,
    wait_bound,
    wait_unschedulable,
)
from e2e.workload import pod_manifest

pytestmark = pytest.mark.reliability


class Creator:
    """Creates pods at a steady pace on a thread, retrying through API outages.

    A create whose answer was lost (the API server went away mid-request) is retried and its
    409 AlreadyExists counted as created, so no pod is lost and none is made twice.
    """

    def __init__(self, core: k8s.CoreV1Api, namespace: str, bodies: list[dict[str, Any]]):
        self.core = core
        self.namespace = namespace
        self.bodies = bodies
        self.created = 0
        self.retries = 0
        self.rate = 50.0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="creator", daemon=True)

    def start(self, rate: float) -> Creator:
        self.rate = rate
        self._thread.start()
        return self

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
        if self.error is not None:
            raise RuntimeError("creating pods failed") from self.error
        if self._thread.is_alive():
            self._stop.set()
            raise TimeoutError(f"only {self.created} of {len(self.bodies)} pods created")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        try:
            self._create_all()
        except BaseException as exc:
            self.error = exc

    def _create_all(self) -> None:
        for body in self.bodies:
            while not self._stop.is_set():
                try:
                    self.core.create_namespaced_pod(self.namespace, body, _request_timeout=10)
                    break
                except k8s.ApiException as exc:
                    if exc.status == 409:
                        break
                    if exc.status not in (429, 500, 503, 504) and exc.status != 0:
                        raise
                except (urllib3.exceptions.HTTPError, OSError):
                    pass
                self.retries += 1
                self._stop.wait(0.5)
            if self._stop.is_set():
                return
            self.created += 1
            self._stop.wait(1.0 / self.rate)


def _sigkill(proc: Any) -> float:
    """SIGKILLs a kube-pysched this test started (by its pid); returns when, as epoch s."""
    assert proc.process is not None
    os.kill(proc.process.pid, signal.SIGKILL)
    killed = time.time()
    proc.process.wait(30)
    return killed


def _failed_scheduling(api: k8s.ApiClient, namespace: str) -> list[str]:
    events = k8s.EventsV1Api(api).list_namespaced_event(namespace).items
    return [f"{e.regarding.name}: {e.note}" for e in events if e.reason == "FailedScheduling"]


def test_leader_killed_mid_burst_standby_binds_every_pod_once(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
    tmp_path: Path,
) -> None:
    total = 300
    group = unique("g")
    # Exactly full: 20 nodes x 3 CPU = 300 pods x 200m; an overcommit strands a pod.
    nodes = {n.metadata.name for n in kwok_nodes(20, cpu="3", memory="16Gi", labels={"g": group})}
    coordination = k8s.CoordinationV1Api(api_client)
    lease_name = unique("lease")
    name = unique("pysched")
    config = default_config(
        leaderElection={
            "leaderElect": True,
            "resourceNamespace": namespace,
            "resourceName": lease_name,
            **LEASE,
        },
        profiles=[{"schedulerName": name}],
    )
    # -v 2: "successfully bound pod to node" says which replica bound which pod.
    leader = pysched(config, name="replica-a", extra_args=["-v", "2"])
    assert leader.process is not None
    wait_for(
        lambda: _holder_pid(coordination, namespace, lease_name) == leader.process.pid,
        timeout=60,
        what="replica-a to lead",
    )
    standby = pysched(config, name="replica-b", extra_args=["-v", "2"])
    assert standby.process is not None

    bodies = [
        pod_manifest(
            f"p-{i}", scheduler_name=name, cpu="200m", memory="32Mi", node_selector={"g": group}
        )
        for i in range(total)
    ]
    started = time.time()
    creator = Creator(core_v1, namespace, bodies).start(rate=60.0)
    try:
        wait_for(lambda: scheduled(leader, name) >= 60, timeout=120, what="60 pods scheduled")
        killed = _sigkill(leader)
        created_at_kill = creator.created
        # Counted now: while the creator finishes, the standby may take over and bind the rest.
        bound_at_kill = sum(
            1 for p in pods_by_name(core_v1, namespace).values() if p.spec.node_name
        )
    finally:
        creator.join(120)
    assert bound_at_kill < total, "the burst was over before the kill"

    wait_for(
        lambda: _holder_pid(coordination, namespace, lease_name) == standby.process.pid,
        timeout=60,
        what="replica-b to take the lease",
    )
    pods = wait_bound(core_v1, namespace, [b["metadata"]["name"] for b in bodies], timeout=180)
    all_bound = time.time()

    assert {p.spec.node_name for p in pods.values()} <= nodes
    assert_no_overcommit(core_v1, nodes)
    assert standby.alive()
    lease = coordination.read_namespaced_lease(lease_name, namespace)
    assert lease.spec.lease_transitions == 1, "the lease changed hands more than once"
    by_a, by_b = bound_pods(leader), bound_pods(standby)
    twice = [pod for pod, n in Counter(by_a + by_b).items() if n > 1]
    assert not twice, f"pods bound twice: {twice[:10]}"
    failed = _failed_scheduling(api_client, namespace)
    assert not failed, failed[:10]

    acquired = log_times(standby, "successfully acquired lease")
    first_bind_b = log_times(standby, "successfully bound pod to node")
    assert len(acquired) == 1
    record_figures(
        tmp_path,
        "leader_kill",
        {
            "pods": total,
            "nodes": len(nodes),
            "lease": LEASE,
            "created_at_kill": created_at_kill,
            "bound_at_kill": bound_at_kill,
            "bound_by_killed_leader_logged": len(by_a),
            "bound_by_new_leader": len(by_b),
            "create_retries": creator.retries,
            "kill_to_lease_acquired_s": round(acquired[0] - killed, 2),
            "kill_to_first_bind_by_new_leader_s": round(first_bind_b[0] - killed, 2)
            if first_bind_b
            else None,
            "kill_to_all_bound_s": round(all_bound - killed, 2),
            "burst_start_to_all_bound_s": round(all_bound - started, 2),
            "lease_transitions": lease.spec.lease_transitions,
        },
    )


def test_api_server_stopped_and_restarted_mid_burst_every_pod_bound(
    local_control_plane: Any,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
    tmp_path: Path,
) -> None:
    total = 200
    group = unique("g")
    # Exactly full: 10 nodes x 4 CPU = 200 pods x 200m.
    nodes = {n.metadata.name for n in kwok_nodes(10, cpu="4", memory="16Gi", labels={"g": group})}
    name = unique("pysched")
    # Without leader election: an outage longer than renewDeadline makes a leader exit (and
    # its replica take over), which test_leader_partition covers; this one must ride it out.
    # -v 4: the 410 Gone line relists_since reads is V(4), as client-go's "Watch closed".
    sched = pysched(profile_config(name), name="survivor", extra_args=["-v", "4"])
    bodies = [
        pod_manifest(
            f"p-{i}", scheduler_name=name, cpu="200m", memory="32Mi", node_selector={"g": group}
        )
        for i in range(total)
    ]
    creator = Creator(core_v1, namespace, bodies).start(rate=40.0)
    try:
        wait_for(lambda: scheduled(sched, name) >= 40, timeout=120, what="40 pods scheduled")
        stopped = time.time()
        local_control_plane.restart_apiserver(down_seconds=5.0, await_controllers=False)
        ready = time.time()
    finally:
        creator.join(180)
        local_control_plane.await_controllers()
    bound_at_ready = sum(1 for p in pods_by_name(core_v1, namespace).values() if p.spec.node_name)
    pods = wait_bound(core_v1, namespace, [b["metadata"]["name"] for b in bodies], timeout=180)
    all_bound = time.time()

    assert len(pods) == total
    assert {p.spec.node_name for p in pods.values()} <= nodes
    assert_no_overcommit(core_v1, nodes)
    assert sched.alive()
    # Informers relist on 410 Gone; one whose resourceVersion was still the newest when the
    # restarted API server's watch cache started (often pods, written up to the stop) resumes
    # its watch without one, which is right too.
    relists = relists_since(sched, stopped)
    assert relists, "no informer relisted after the restart"
    wait_for(lambda: cache_matches_api(sched, core_v1), timeout=60, what="cache = API")
    record_figures(
        tmp_path,
        "apiserver_restart",
        {
            "pods": total,
            "nodes": len(nodes),
            "down_seconds": 5.0,
            "stop_to_ready_s": round(ready - stopped, 2),
            "bound_when_ready": bound_at_ready,
            "ready_to_all_bound_s": round(all_bound - ready, 2),
            "create_retries": creator.retries,
            "relisted_informers": len(relists),
            "relists": dict(sorted(relists.items())),
        },
    )


def test_etcd_compaction_forces_410_every_informer_relists_without_phantoms(
    local_control_plane: Any,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
    tmp_path: Path,
    cluster: Any,
) -> None:
    group = unique("g")
    stay = {
        n.metadata.name
        for n in kwok_nodes(3, cpu="2", memory="8Gi", labels={"g": group, "keep": "yes"})
    }
    doomed = {n.metadata.name for n in kwok_nodes(2, cpu="2", memory="8Gi", labels={"g": group})}
    name = unique("pysched")
    server = urlsplit(_server(Path(cluster.kubeconfig)))
    with PartitionProxy(server.hostname or "127.0.0.1", server.port or 443) as proxy:
        kubeconfig = _via(Path(cluster.kubeconfig), proxy.port, tmp_path / "via-proxy.kubeconfig")
        sched = pysched(
            profile_config(name), name="cut-off", kubeconfig=kubeconfig, extra_args=["-v", "4"]
        )
        # The kept nodes exactly full (3 x 2 CPU = 12 x 500m); the doomed ones empty.
        old = [
            pod_manifest(
                f"old-{i}",
                scheduler_name=name,
                cpu="500m",
                memory="32Mi",
                node_selector={"g": group, "keep": "yes"},
            )
            for i in range(12)
        ]
        for body in old:
            core_v1.create_namespaced_pod(namespace, body)
        wait_bound(core_v1, namespace, [b["metadata"]["name"] for b in old])

        # Behind the scheduler's back: two nodes and four pods go, a node comes.
        proxy.partition()
        gone_nodes_rv = core_v1.list_node().metadata.resource_version
        for node in doomed:
            core_v1.delete_node(node)
        force = k8s.V1DeleteOptions(grace_period_seconds=0)
        for i in range(4):
            core_v1.delete_namespaced_pod(f"old-{i}", namespace, body=force)
        added = kwok_nodes(1, cpu="2", memory="8Gi", labels={"g": group})[0].metadata.name

        port = local_control_plane.ports["etcd"]
        revision = etcd_revision(port)
        compact_etcd(port, revision)
        cut = time.time()
        local_control_plane.restart_apiserver()
        with pytest.raises(k8s.ApiException) as gone:
            core_v1.list_node(resource_version=gone_nodes_rv, resource_version_match="Exact")
        assert gone.value.status == 410, "the old resourceVersion survived the compaction"
        healed = time.time()
        proxy.heal()

        def every_informer_relisted() -> bool | str:
            missing = INFORMERS - set(relists_since(sched, cut))
            return not missing or f"no 410 yet for {sorted(missing)}"

        wait_for(every_informer_relisted, timeout=120, what="410 Gone for every informer")
        relisted = time.time()
        wait_for(lambda: cache_matches_api(sched, core_v1), timeout=60, what="cache = API")

        # Free now: 4 x 500m on the kept nodes and 2 CPU on the new one = 8 pods. A phantom
        # pod keeps one of them Pending; a phantom (empty) node draws pods to a deleted node.
        new = [
            pod_manifest(
                f"new-{i}",
                scheduler_name=name,
                cpu="500m",
                memory="32Mi",
                node_selector={"g": group},
            )
            for i in range(8)
        ]
        for body in new:
            core_v1.create_namespaced_pod(namespace, body)
        pods = wait_bound(core_v1, namespace, [b["metadata"]["name"] for b in new])
        live = stay | {added}
        assert {pods[b["metadata"]["name"]].spec.node_name for b in new} <= live
        assert_no_overcommit(core_v1, live)
        core_v1.create_namespaced_pod(
            namespace,
            pod_manifest(
                "one-too-many", scheduler_name=name, cpu="500m", node_selector={"g": group}
            ),
        )
        message = wait_unschedulable(core_v1, namespace, "one-too-many").message
        seen = re.match(r"0/(\d+) nodes are available", message)
        assert seen is not None, message
        assert int(seen.group(1)) == len(core_v1.list_node().items), message
        assert f"{len(live)} Insufficient cpu" in message, message

    relists = relists_since(sched, cut)
    record_figures(
        tmp_path,
        "etcd_compaction",
        {
            "compacted_revision": revision,
            "informers": len(INFORMERS),
            "relisted_informers": len(relists),
            "gone_answers": sum(relists.values()),
            "relists": dict(sorted(relists.items())),
            "heal_to_every_informer_relisted_s": round(relisted - healed, 2),
        },
    )
