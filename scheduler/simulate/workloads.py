"""What the cluster's controllers and admission would make of a what-if: the pods of added
workloads, and the pods a drained node's controllers recreate.

`--add` takes Pods, Deployments, ReplicaSets, StatefulSets, Jobs and PodGroups; each workload
becomes the pods its controller would create (a Deployment through a ReplicaSet, as the
deployment controller does), with the controller's labels and owner reference, so default
spreading and affinity see what they would see live; a PodGroup is loaded as it is, before
any pod, as the gang plugins would find it created. Priority is resolved from the
PriorityClasses as the Priority admission plugin does. Names of pods a ReplicaSet or Job
creates end in a counter here where the API server would add five random characters.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.json_types import Json
from scheduler.simulate.evictions import Budgets

#: Workload kinds `--add` expands.
EXPANDED_KINDS = ("Pod", "Deployment", "ReplicaSet", "StatefulSet", "Job", "PodGroup")
#: The PodGroup API groups the scheduler reads (scheduler-plugins' and Kubernetes' own).
POD_GROUP_GROUPS = ("scheduling.x-k8s.io/", "scheduling.k8s.io/")
#: The controllers whose pods a drain recreates as new pending pods.
RECREATING_OWNERS = frozenset(
    {"ReplicaSet", "StatefulSet", "Job", "ReplicationController", "CronJob"}
)
#: Pods kubectl drain leaves in place.
KEPT_OWNERS = frozenset({"DaemonSet", "Node"})


class WorkloadError(ValueError):
    """An added object that cannot be expanded, or a what-if that names what does not exist."""


class UnknownWorkloadError(WorkloadError):
    """A `--scale` target or `--remove-nodes` selector the snapshot has nothing for (a usage
    error: the command line names what is not there)."""


def uid_for(*parts: str) -> str:
    """A uid that is the same for the same parts: a what-if repeats exactly."""
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _hash(obj: Any) -> str:
    return hashlib.sha256(repr(obj).encode()).hexdigest()[:10]


@dataclass
class Priorities:
    """PriorityClasses by name and the global default, as the Priority admission plugin."""

    values: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    default: tuple[int, str | None] | None = None

    @classmethod
    def of(cls, classes: Iterable[Json]) -> Priorities:
        out = cls()
        for pc in classes:
            value = (int(pc.get("value") or 0), pc.get("preemptionPolicy"))
            out.values[pc["metadata"]["name"]] = value
            if pc.get("globalDefault"):
                out.default = value
        return out

    def admit(self, pod: Json) -> None:
        """Sets spec.priority (and preemptionPolicy) as admission would; an unknown class is
        an error, as the API server refuses such a pod."""
        spec = pod["spec"]
        if spec.get("priority") is not None:
            return
        name = spec.get("priorityClassName")
        if name:
            if name not in self.values:
                raise WorkloadError(
                    f"pod {pod['metadata']['name']}: no PriorityClass with name {name} was found"
                )
            value, policy = self.values[name]
        elif self.default is not None:
            value, policy = self.default
        else:
            value, policy = 0, None
        spec["priority"] = value
        if policy and not spec.get("preemptionPolicy"):
            spec["preemptionPolicy"] = policy


def _owner(kind: str, api_version: str, name: str, uid: str) -> Json:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(
    template: Mapping[str, Any],
    namespace: str,
    name: str,
    *,
    owner: Json | None = None,
    extra_labels: Mapping[str, str] | None = None,
) -> Json:
    """A pending pod as a controller creates it from its template."""
    tmpl = copy.deepcopy(dict(template))
    meta = dict(tmpl.get("metadata") or {})
    labels = {**(meta.get("labels") or {}), **(extra_labels or {})}
    pod: Json = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **{k: v for k, v in meta.items() if k in ("annotations",)},
            "name": name,
            "namespace": namespace,
            "uid": uid_for(namespace, name, "pod"),
            "labels": labels,
        },
        "spec": dict(tmpl.get("spec") or {}),
        "status": {"phase": "Pending"},
    }
    if owner is not None:
        pod["metadata"]["ownerReferences"] = [owner]
    return pod


def _replicas(obj: Json, default: int = 1) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return default if value is None else int(value)


def _replica_set_pods(rs: Json, namespace: str) -> list[Json]:
    name = rs["metadata"]["name"]
    uid = rs["metadata"].get("uid") or uid_for(namespace, name, "replicaset")
    owner = _owner("ReplicaSet", "apps/v1", name, uid)
    template = rs["spec"]["template"]
    return [
        pod_from_template(template, namespace, f"{name}-{i:05d}", owner=owner)
        for i in range(_replicas(rs))
    ]


def expand(obj: Json, default_namespace: str = "default") -> tuple[list[Json], list[Json]]:
    """(the pods, the controller objects scheduling reads) that `obj` stands for."""
    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise WorkloadError(f"an added {kind} has no metadata.name")
    namespace = meta.get("namespace") or default_namespace
    where = f"{kind} {namespace}/{name}"
    if kind == "Pod":
        pod = copy.deepcopy(obj)
        pod["metadata"] = {**meta, "namespace": namespace}
        pod["metadata"].setdefault("uid", uid_for(namespace, name, "pod"))
        pod.setdefault("spec", {})
        pod["status"] = {"phase": "Pending"}
        return [pod], []
    if kind == "PodGroup":
        if not str(obj.get("apiVersion", "")).startswith(POD_GROUP_GROUPS):
            raise WorkloadError(
                f"{where}: apiVersion {obj.get('apiVersion')!r} is not a PodGroup API "
                "(scheduling.x-k8s.io or scheduling.k8s.io)"
            )
        group = copy.deepcopy(obj)
        group["metadata"] = {**meta, "namespace": namespace}
        group["metadata"].setdefault("uid", uid_for(namespace, name, "podgroup"))
        return [], [group]
    spec = obj.get("spec") or {}
    if "template" not in spec:
        raise WorkloadError(f"{where}: spec.template is missing")
    if kind == "Deployment":
        template = spec["template"]
        pod_hash = _hash(template)
        labels = {
            **(template.get("metadata") or {}).get("labels", {}),
            "pod-template-hash": pod_hash,
        }
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = pod_hash
        rs_name = f"{name}-{pod_hash}"
        rs: Json = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": rs_name,
                "namespace": namespace,
                "uid": uid_for(namespace, rs_name, "replicaset"),
                "labels": labels,
            },
            "spec": {
                "replicas": _replicas(obj),
                "selector": selector,
                "template": {
                    **template,
                    "metadata": {**(template.get("metadata") or {}), "labels": labels},
                },
            },
        }
        return _replica_set_pods(rs, namespace), [rs]
    if kind == "ReplicaSet":
        rs = copy.deepcopy(obj)
        rs["metadata"] = {**meta, "namespace": namespace}
        rs["metadata"].setdefault("uid", uid_for(namespace, name, "replicaset"))
        return _replica_set_pods(rs, namespace), [rs]
    if kind == "StatefulSet":
        return _stateful_set(obj, namespace, name)
    if kind == "Job":
        uid = meta.get("uid") or uid_for(namespace, name, "job")
        owner = _owner("Job", "batch/v1", name, uid)
        parallelism = spec.get("parallelism")
        count = 1 if parallelism is None else int(parallelism)
        if spec.get("completions") is not None:
            count = min(count, int(spec["completions"]))
        labels = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        pods = [
            pod_from_template(
                spec["template"], namespace, f"{name}-{i:05d}", owner=owner, extra_labels=labels
            )
            for i in range(count)
        ]
        return pods, []
    raise WorkloadError(
        f"{where}: cannot add a {kind} (expected one of {', '.join(EXPANDED_KINDS)})"
    )


def _stateful_set(obj: Json, namespace: str, name: str) -> tuple[list[Json], list[Json]]:
    sts = copy.deepcopy(obj)
    sts["metadata"] = {**obj["metadata"], "namespace": namespace}
    sts["metadata"].setdefault("uid", uid_for(namespace, name, "statefulset"))
    pods: list[Json] = []
    claims: list[Json] = []
    for i in range(_replicas(sts)):
        pod, pod_claims = stateful_pod(sts, i)
        pods.append(pod)
        claims += pod_claims
    return pods, [sts, *claims]


def stateful_pod(sts: Json, ordinal: int) -> tuple[Json, list[Json]]:
    """The StatefulSet's pod of this ordinal (`NAME-ORDINAL`) and the claims of its
    `volumeClaimTemplates`, as the StatefulSet controller creates them."""
    meta = sts["metadata"]
    name, namespace = meta["name"], meta.get("namespace", "default")
    uid = meta.get("uid") or uid_for(namespace, name, "statefulset")
    owner = _owner("StatefulSet", "apps/v1", name, uid)
    spec = sts["spec"]
    pod_name = f"{name}-{ordinal}"
    pod = pod_from_template(
        spec["template"],
        namespace,
        pod_name,
        owner=owner,
        extra_labels={
            "statefulset.kubernetes.io/pod-name": pod_name,
            "apps.kubernetes.io/pod-index": str(ordinal),
        },
    )
    volumes = list(pod["spec"].get("volumes") or [])
    claims: list[Json] = []
    for tmpl in spec.get("volumeClaimTemplates") or []:
        tname = tmpl["metadata"]["name"]
        claim_name = f"{tname}-{pod_name}"
        claims.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim_name,
                    "namespace": namespace,
                    "uid": uid_for(namespace, claim_name, "pvc"),
                    "labels": dict((tmpl.get("metadata") or {}).get("labels") or {}),
                },
                "spec": copy.deepcopy(tmpl.get("spec") or {}),
                "status": {"phase": "Pending"},
            }
        )
        volumes.append({"name": tname, "persistentVolumeClaim": {"claimName": claim_name}})
    pod["spec"]["volumes"] = volumes
    return pod, claims


def controller_of(pod: Json) -> Json | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def recreated(pod: Json, serial: int) -> Json:
    """The pod its controller creates when `pod` is evicted: the same template, pending, a new
    uid, and a new name except for a StatefulSet's (which keeps its identity)."""
    meta = pod["metadata"]
    owner = controller_of(pod) or {}
    if owner.get("kind") == "StatefulSet":
        name = meta["name"]
    else:
        prefix = meta.get("generateName") or f"{meta['name']}-"
        name = f"{prefix}sim{serial:03d}"
    spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **{
                k: v
                for k, v in meta.items()
                if k in ("labels", "annotations", "ownerReferences", "generateName")
            },
            "name": name,
            "namespace": meta.get("namespace", "default"),
            "uid": uid_for(meta.get("namespace", "default"), name, "recreated", str(serial)),
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


@dataclass
class Drained:
    """What draining (or removing) nodes did to the cluster's pods."""

    nodes: list[str] = field(default_factory=list)
    #: Evicted pods (namespace/name) and the pods their controllers create in their place.
    recreated: dict[str, Json] = field(default_factory=dict)
    #: Evicted pods no controller recreates (kubectl drain --force deletes them).
    lost: list[str] = field(default_factory=list)
    #: DaemonSet and mirror pods, left on the cordoned node as kubectl drain leaves them
    #: (on a removed node: gone with it).
    kept: list[str] = field(default_factory=list)
    #: Evictions a PodDisruptionBudget refused: pod -> the eviction API's message. The pod
    #: stays on the cordoned node (kubectl drain keeps retrying).
    blocked: dict[str, str] = field(default_factory=dict)


def _pod_key(pod: Json) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def _stays_with_node(pod: Json) -> bool:
    owner = controller_of(pod) or {}
    mirror = "kubernetes.io/config.mirror" in (pod["metadata"].get("annotations") or {})
    return owner.get("kind") in KEPT_OWNERS or mirror


def _displace(pod: Json, out: Drained, serial: int) -> None:
    """An evicted (or node-deleted) pod: recreated by its controller, or lost. `serial`
    numbers the recreated pods of earlier changes, so names stay unique."""
    if (controller_of(pod) or {}).get("kind") in RECREATING_OWNERS:
        out.recreated[_pod_key(pod)] = recreated(pod, serial + len(out.recreated) + 1)
    else:
        out.lost.append(_pod_key(pod))


def drain(
    pods: list[Json],
    nodes_by_name: dict[str, Json],
    names: Iterable[str],
    budgets: Budgets | None = None,
    serial: int = 0,
) -> tuple[list[Json], Drained]:
    """Cordons the nodes and evicts their pods, as `kubectl drain --ignore-daemonsets --force`:
    through the eviction API, whose PodDisruptionBudget check `budgets` makes (None: deleted
    without it, as `--disable-eviction`); the pods left in the cluster and what was done."""
    out = Drained()
    drained = set()
    for name in names:
        node = nodes_by_name.get(name)
        if node is None:
            raise WorkloadError(f"--drain {name}: the snapshot has no node {name!r}")
        node.setdefault("spec", {})["unschedulable"] = True
        out.nodes.append(name)
        drained.add(name)
    kept_pods: list[Json] = []
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("nodeName") not in drained:
            kept_pods.append(pod)
            continue
        if _stays_with_node(pod):
            kept_pods.append(pod)
            out.kept.append(_pod_key(pod))
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            kept_pods.append(pod)
            continue
        refused = budgets.evict(pod) if budgets is not None else None
        if refused is not None:
            kept_pods.append(pod)
            out.blocked[_pod_key(pod)] = refused
            continue
        _displace(pod, out, serial)
    return kept_pods, out


def remove_nodes(
    pods: list[Json], nodes: list[Json], names: Iterable[str], serial: int = 0
) -> tuple[list[Json], list[Json], Drained]:
    """The nodes deleted: (the nodes left, the pods left, what happened to the pods). Their
    pods go as the pod garbage collector deletes them: a controller's come back pending, a
    bare pod is lost, a DaemonSet's or mirror pod goes with its node. PodDisruptionBudgets
    play no part (nothing is evicted)."""
    removed = set(names)
    out = Drained(nodes=[n["metadata"]["name"] for n in nodes if n["metadata"]["name"] in removed])
    kept_pods: list[Json] = []
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") not in removed:
            kept_pods.append(pod)
        elif _stays_with_node(pod):
            out.kept.append(_pod_key(pod))
        elif (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            _displace(pod, out, serial)
    return [n for n in nodes if n["metadata"]["name"] not in removed], kept_pods, out
