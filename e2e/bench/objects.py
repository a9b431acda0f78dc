"""A run's objects in the cluster: namespace, nodes, volumes, device claims, pods; made, deleted.

Every run gets its own namespace and nodes (labelled with the run id), so each scheduler meets
an identical cluster. Init pods are placed directly (spec.nodeName), so setup does not depend on
the scheduler under test. Bulk creates go through the lean RestClient (rest.py).
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Container, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from e2e.bench.measure import PodWatcher
from e2e.bench.options import RunOptions
from e2e.bench.rest import CreateError, RestClient
from e2e.bench.scraped import cluster_pod_lists
from e2e.bench.workload import (
    POD_CLAIM,
    PRIORITY_CLASSES,
    RESOURCE_API,
    NodeTemplate,
    PodTemplate,
    Size,
    Workload,
    replica_set_manifest,
    service_manifest,
)
from e2e.cluster import ControlPlane, wait_default_service_account, wait_for
from e2e.cluster.kwok import DISREGARD_LABEL_KEY, DISREGARD_LABEL_VALUE

CREATE_THREADS = 24
CLEANUP_TIMEOUT = 600.0
# How long cleanup waits for a DeleteCollection to take effect before asking again.
DELETE_RETRY_SECONDS = 30.0
NODE_READY_SECONDS_EACH = 0.15
# kwok's pod LIST per node, one at a time: about 40 ms each at 5000 nodes; generous.
KWOK_NODE_SYNC_SECONDS_EACH = 0.2
# Waiting for kwok to make the init pods Running: generous, 0.1 s each (20 000 at PreemptionAsync
# 5000); the record's phases_seconds.init_pods_running says how long it took.
INIT_POD_RUNNING_SECONDS_EACH = 0.1
# The PV controller binds one claim at a time with four writes; at 5000 nodes, beside kwok's node
# leases, it managed 9-12 claims/s on a 2-core machine: 0.2 s per claim.
CLAIM_BOUND_SECONDS_EACH = 0.2
#: The label kwok's disregardStatusWithLabelSelector skips: a bound pod carrying it stays Pending.
KWOK_IGNORES = {DISREGARD_LABEL_KEY: DISREGARD_LABEL_VALUE}
WARMUP = PodTemplate(requests={"cpu": "1m", "memory": "1Mi"})
#: The name of the measured pods' ReplicaSet and Service (when the workload has them).
MEASURED_OWNER = "measured"
#: Taints the node lifecycle controller puts on a node it has stopped hearing from.
UNREADY_TAINTS = frozenset({"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"})


def parallel(
    fn: Callable[[Any], object], items: Iterable[Any], threads: int = CREATE_THREADS
) -> None:
    """Runs fn over items from a thread pool, re-raising the first failure."""
    with ThreadPoolExecutor(threads, thread_name_prefix="bench-create") as pool:
        list(pool.map(fn, items))


def unready_node_count(node_list: dict[str, Any], names: Container[str]) -> int:
    """How many nodes of a NodeList among `names` carry a taint of UNREADY_TAINTS."""
    count = 0
    for node in node_list.get("items", []):
        if node["metadata"]["name"] not in names:
            continue
        taints = node.get("spec", {}).get("taints") or []
        count += any(t.get("key") in UNREADY_TAINTS for t in taints)
    return count


def _node_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = node.get("spec", {}).get("taints") or []
    return ready and not any(t.get("key", "").startswith("node.kubernetes.io/") for t in taints)


class ClusterObjects:
    """The objects of one (workload, size) run on `cp`; Run adds the scheduler and the window."""

    def __init__(
        self, cp: ControlPlane, workload: Workload, size: Size, options: RunOptions
    ) -> None:
        self.cp = cp
        self.workload = workload
        self.size = size
        self.options = options
        self.run_id = uuid.uuid4().hex[:6]
        self.namespace = f"bench-{self.run_id}"
        self.run_label = {"bench": self.run_id}
        self.node_names: list[str] = []
        #: The paths of the cluster-wide objects made besides the nodes, deleted with them.
        self.cluster_objects: list[str] = []
        self.phases: dict[str, float] = {}
        self._lock = threading.Lock()
        self.client = cp.api_client()
        #: For the pod watch and what RestClient does not send (safe to share among threads).
        self.core = k8s.CoreV1Api(self.client)
        self.rest = RestClient(self.client)

    def close(self) -> None:
        self.rest.close()
        self.client.close()

    @contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        """Records how long a phase took (wall seconds), to see where a run's time goes."""
        began = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = round(time.monotonic() - began, 1)

    # --- what a kind of workload varies (gangs.GangRun overrides these) ---------------------

    def measured_manifest(self, name: str) -> dict[str, Any]:
        """The measured pod `name`."""
        return self.workload.measured.manifest(name)

    def create_groups(self) -> None:
        """Objects the measured pods need besides nodes, volumes and init pods (none here)."""

    # --- setup ------------------------------------------------------------------------------

    def create_namespace(self) -> None:
        """The run's namespace, and the PriorityClasses the workload templates name
        (cluster-wide, created once)."""
        for name, value in PRIORITY_CLASSES.items():
            body = {"metadata": {"name": name}, "value": value}
            self.rest.create("/apis/scheduling.k8s.io/v1/priorityclasses", body)
        self.rest.create("/api/v1/namespaces", {"metadata": {"name": self.namespace}})

    def set_up(self) -> None:
        """The namespace's objects before the scheduler starts, each waited for."""
        lists_before = self._cluster_pod_lists()
        with self._phase("setup"):
            wait_default_service_account(self.core, self.namespace)
            self.create_nodes(range(self.size.nodes))
            self.create_service()
            self.create_volumes()
            self.create_init_pods()
            self.create_groups()
        with self._phase("kwok_node_sync"):
            self._wait_kwok_node_sync(lists_before)

    def create_pod(self, manifest: dict[str, Any]) -> None:
        """Creates the pod; with workload volumes, an init or measured pod uses the claim
        `create_volumes` made for it."""
        name = manifest["metadata"]["name"]
        if self.workload.volumes is not None and name.startswith(("init-", "pod-")):
            claim = self.workload.volumes.manifests(self.namespace, name)[0]
            volumes = [{"name": "vol", "persistentVolumeClaim": {"claimName": claim}}]
            manifest = {**manifest, "spec": {**manifest["spec"], "volumes": volumes}}
        if (self.options.capacity and name.startswith(("init-", "pod-"))) or (
            self.options.pending_pods and name.startswith(("pod-", "warm-up"))
        ):
            # kwok plays no stage for them: no Running status patch per bound pod, which the
            # API server, kwok and both schedulers' informers would otherwise spend CPU on.
            meta = manifest["metadata"]
            labels = {**meta.get("labels", {}), **KWOK_IGNORES}
            manifest = {**manifest, "metadata": {**meta, "labels": labels}}
        self.rest.create(f"/api/v1/namespaces/{self.namespace}/pods", manifest)

    def create_measured(self, names: list[str]) -> None:
        parallel(lambda name: self.create_pod(self.measured_manifest(name)), names)

    def create_volumes(self) -> None:
        """A pre-bound PV (first) and claim per init and measured pod, before any pod, waited
        for until the PV controller has bound every claim (so the measured pods find their
        claims bound, as scheduler_perf's do)."""
        volumes = self.workload.volumes
        if volumes is None:
            return
        pods = [f"init-{i}" for i in range(self.size.init_pods)]
        pods += [f"pod-{i}" for i in range(self.size.measured_pods)]
        claims_path = f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims"

        def create(pod: str) -> None:
            _, pv, pvc = volumes.manifests(self.namespace, pod)
            with self._lock:
                self.cluster_objects.append(f"/api/v1/persistentvolumes/{pv['metadata']['name']}")
            self.rest.create("/api/v1/persistentvolumes", pv)
            self.rest.create(claims_path, pvc)

        parallel(create, pods)
        self._wait_listed(
            claims_path,
            lambda claim: claim.get("status", {}).get("phase") == "Bound",
            len(pods),
            "the run's claims Bound",
            CLAIM_BOUND_SECONDS_EACH,
        )

    def create_nodes(
        self, indexes: Iterable[int], *, template: NodeTemplate | None = None
    ) -> list[str]:
        """Creates nodes from the workload's template (waited for until Ready) or `template`."""
        node_template = template or self.workload.nodes
        pairs = [(i, f"bench-{self.run_id}-{i}") for i in indexes]

        def create(pair: tuple[int, str]) -> None:
            i, name = pair
            for path, obj in node_template.node_objects(name):
                self.rest.create(path, obj)
                with self._lock:
                    self.cluster_objects.append(f"{path}/{name}")
            self.rest.create("/api/v1/nodes", node_template.manifest(name, i, self.run_label))

        parallel(create, pairs)
        names = [name for _, name in pairs]
        self.node_names += names
        if template is None:
            # Registered Ready, the nodes still wait for the node lifecycle controller to lift
            # the not-ready taint the API server's admission put on them: 5000 take minutes.
            self._wait_listed(
                f"/api/v1/nodes?labelSelector=bench%3D{self.run_id}",
                _node_ready,
                len(self.node_names),
                "the run's nodes to be Ready",
                NODE_READY_SECONDS_EACH,
            )
        return names

    def _wait_listed(
        self,
        path: str,
        wanted: Callable[[dict[str, Any]], bool],
        count: int,
        what: str,
        seconds_each: float,
    ) -> None:
        """Until `count` of the objects listed at `path` are `wanted` (for at most
        `seconds_each` per object, and at least 300 s)."""

        def enough() -> bool | str:
            status, body = self.rest.request("GET", path)
            if status != 200:
                return f"the list answered {status}"
            n = sum(1 for item in json.loads(body)["items"] if wanted(item))
            return n >= count or f"{n}/{count}"

        timeout = max(300.0, seconds_each * count)
        wait_for(enough, timeout=timeout, what=what, interval=1.0)

    def create_service(self) -> None:
        """The measured pods' Service, and the DeviceClass (cluster-wide, kept) and the
        ResourceClaimTemplate of a workload with a resource driver."""
        if self.workload.service:
            self.rest.create(
                f"/api/v1/namespaces/{self.namespace}/services",
                service_manifest(MEASURED_OWNER, self.workload.measured),
            )
        driver = self.workload.nodes.resource_driver
        if driver is not None:
            self.rest.create(f"/apis/{RESOURCE_API}/deviceclasses", driver.device_class())
            templates = f"/apis/{RESOURCE_API}/namespaces/{self.namespace}/resourceclaimtemplates"
            self.rest.create(templates, driver.claim_template())

    def create_init_pods(self) -> None:
        """Init pods placed round-robin over the nodes, as if scheduled before the run."""
        template = self.workload.init
        if template is None or self.size.init_pods == 0:
            return
        nodes = self.node_names

        driver = self.workload.nodes.resource_driver
        claims = f"/apis/{RESOURCE_API}/namespaces/{self.namespace}/resourceclaims"

        def create(i: int) -> None:
            name, node = f"init-{i}", nodes[i % len(nodes)]
            spec: dict[str, Any] = {"nodeName": node}
            if driver is not None:  # a device of its node, held as if the scheduler allocated it
                claim, status = driver.allocated_claim(f"{name}-claim", node, i // len(nodes))
                self.rest.create(claims, claim)
                self.rest.create(f"{claims}/{name}-claim/status", status, method="PATCH")
                spec["resourceClaims"] = [{"name": POD_CLAIM, "resourceClaimName": f"{name}-claim"}]
            self.create_pod(template.manifest(name, **spec))

        parallel(create, range(self.size.init_pods))
        if not self.options.capacity:  # capacity mode has kwok leave them Pending
            with self._phase("init_pods_running"):
                self._wait_init_pods_running()

    def _wait_init_pods_running(self) -> None:
        """Until kwok has made every init pod Running, so that none of its status patches for
        them lands in the measure window (at 1000 nodes up to ~540 did, a different number in
        each run). Only init pods are in the namespace yet."""

        def running() -> bool | str:
            left = self.core.list_namespaced_pod(
                self.namespace, field_selector="status.phase!=Running", limit=1
            )
            return not left.items or f"{left.items[0].metadata.name} and maybe others not Running"

        timeout = max(300.0, INIT_POD_RUNNING_SECONDS_EACH * self.size.init_pods)
        wait_for(running, timeout=timeout, what="kwok to make the init pods Running", interval=1.0)

    def _cluster_pod_lists(self) -> float | None:
        text = self._api_server_metrics()
        return None if text is None else cluster_pod_lists(text)

    def _wait_kwok_node_sync(self, before: float | None) -> None:
        """Until kwok has listed every node's pods once: it does when it first holds a node's
        Lease, one LIST after another (podsOnNodeSyncParallelism 1), and at 5000 nodes the last
        came 3.5 minutes after the nodes, past the end of setup. Unwaited for, they fell into
        the first seconds of the window, more of them into kube-scheduler's, which opens 1-2 s
        sooner after setup than kube-pysched's (docs/benchmarks.md)."""
        if before is None:
            print(
                "warning: cannot tell whether kwok has listed every node's pods; their LISTs "
                "may fall into the window",
                file=sys.stderr,
            )
            return
        wanted = before + self.size.nodes

        def synced() -> bool | str:
            lists = self._cluster_pod_lists()
            if lists is None:
                return "the API server's /metrics could not be read"
            return lists >= wanted or f"{lists - before:.0f} of {self.size.nodes} nodes listed"

        wait_for(
            synced,
            timeout=max(300.0, KWOK_NODE_SYNC_SECONDS_EACH * self.size.nodes),
            what="kwok to list the pods of every node",
            interval=1.0,
        )

    def warm_up(self) -> None:
        """One tiny pod bound proves the scheduler has synced its caches and is scheduling."""
        self.create_pod(WARMUP.manifest("warm-up"))

        def bound() -> bool | str:
            pod = self.core.read_namespaced_pod("warm-up", self.namespace)
            return bool(pod.spec.node_name) or "not bound yet"

        wait_for(bound, timeout=120, what="the warm-up pod to be bound", interval=0.1)

    def create_through_replica_set(self, watcher: PodWatcher) -> list[str]:
        """Creates the measured pods' ReplicaSet; returns their names once the watch has seen
        all of them (kube-controller-manager names them)."""
        count = self.size.measured_pods
        kwok_labels = dict(KWOK_IGNORES) if self.options.pending_pods else {}
        self.rest.create(
            f"/apis/apps/v1/namespaces/{self.namespace}/replicasets",
            replica_set_manifest(MEASURED_OWNER, self.workload.measured, count, kwok_labels),
        )
        prefix = f"{MEASURED_OWNER}-"

        def seen() -> list[str]:
            return [n for n in watcher.snapshot().created if n.startswith(prefix)]

        wait_for(
            lambda: len(seen()) >= count or f"{len(seen())}/{count} created",
            timeout=self.options.deadline,
            what=f"the pods of ReplicaSet {MEASURED_OWNER}",
            interval=0.2,
        )
        return seen()

    # --- reading the API server -------------------------------------------------------------

    def unready_nodes(self) -> int | None:
        """How many of the run's nodes the node lifecycle controller has tainted as silent, or
        None (with a warning: no figure, never a zero) if the nodes cannot be listed. Only the
        nodes made Ready before the scheduler started count: a churn node created a moment ago
        is still tainted not-ready without having gone silent."""
        body = self._read("/api/v1/nodes", "list the nodes")
        if body is None:
            return None
        ready_before = {f"bench-{self.run_id}-{i}" for i in range(self.size.nodes)}
        return unready_node_count(json.loads(body), ready_before)

    def _api_server_metrics(self) -> str | None:
        """The API server's /metrics text, or None (with a warning: the record then has no
        `api_requests`, never zeros) if it cannot be read."""
        body = self._read("/metrics", "read the API server's /metrics")
        return None if body is None else body.decode()

    def _read(self, path: str, what: str) -> bytes | None:
        """GET `path` from the API server, or None with a warning saying it could not `what`."""
        try:
            status, body = self.rest.request("GET", path)
        except (OSError, http.client.HTTPException) as err:
            print(f"warning: could not {what}: {err}", file=sys.stderr)
            return None
        if status != 200:
            print(f"warning: could not {what}: the API server answered {status}", file=sys.stderr)
            return None
        return body

    # --- cleanup ----------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Deletes the run's pods, nodes, namespace and cluster-wide objects; waits for the pods
        and nodes to be gone. The namespace itself is left to terminate in the background:
        nothing in it is left for a later run's scheduler to see. DeleteCollection of
        tens of thousands of pods may be cut at the API server's timeout part way: it is asked
        again while pods remain."""
        namespace = f"/api/v1/namespaces/{self.namespace}"
        if self.workload.owner:  # or it would recreate the pods deleted next
            self._delete(f"/apis/apps/v1/namespaces/{self.namespace}/replicasets/{MEASURED_OWNER}")
        self._delete(f"{namespace}/pods")
        self._delete(namespace)
        # A PV goes once its claim is gone (pv-protection).
        parallel(
            self._delete, [f"/api/v1/nodes/{n}" for n in self.node_names] + self.cluster_objects
        )
        asked = time.monotonic()

        def gone() -> bool | str:
            nonlocal asked
            try:
                pods = self.core.list_namespaced_pod(self.namespace, limit=1).items
                nodes = self.core.list_node(label_selector=f"bench={self.run_id}", limit=1).items
            except (ApiException, HTTPError) as err:
                return f"listing failed: {err}"
            if pods and time.monotonic() - asked > DELETE_RETRY_SECONDS:
                self._delete(f"{namespace}/pods")
                asked = time.monotonic()
            return (not pods and not nodes) or "pods or nodes still present"

        wait_for(gone, timeout=CLEANUP_TIMEOUT, what="the run's pods and nodes to be deleted")

    def _delete(self, path: str) -> None:
        """DELETE `path` (a collection: all of it), reporting a failure without raising: the
        cleanup goes on, and waits for what matters to be gone."""
        try:
            self.rest.delete(path)
        except (CreateError, OSError, http.client.HTTPException) as err:
            print(f"warning: {err}", file=sys.stderr)
