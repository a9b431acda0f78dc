"""`--scale`: a workload of the snapshot scaled as its controller would scale it.

Scaling up creates the pods the controller would create: a Deployment's through its current
ReplicaSet (its pod template, `pod-template-hash` and owner), a ReplicaSet's from its template,
a StatefulSet's at the missing ordinals (with their `volumeClaimTemplates` claims unless the
snapshot has them). Scaling down deletes the pods the controller would delete: a StatefulSet's
highest ordinals first; a ReplicaSet's (a Deployment's) in the ReplicaSet controller's order
(`getPodsToDelete`, ranked by `ActivePodsWithRanks`): unassigned before assigned, Pending
before Unknown before Running, not ready before ready, lower `pod-deletion-cost` first, pods
on nodes with more of the workload's pods first, ready for less time first (in powers of two
of the time since, `LogarithmicScaleDown`), more container restarts first, newer first.

A snapshot has no Deployments (scheduling never reads one), so a Deployment is found through
the ReplicaSets it owns: its current one is the one of the highest
`deployment.kubernetes.io/revision`. A Deployment in the middle of a rollout (an older
ReplicaSet with replicas) is refused: the deployment controller splits a scale between its
ReplicaSets proportionally, which the snapshot does not say enough to reproduce.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cmp_to_key

from scheduler.api.json_types import Json
from scheduler.simulate.cluster import ClusterObjects
from scheduler.simulate.workloads import (
    UnknownWorkloadError,
    WorkloadError,
    controller_of,
    pod_from_template,
    stateful_pod,
)

#: `--scale` kinds as kubectl spells them, and the kind each names.
SCALE_KINDS = {
    "deployment": "Deployment",
    "deployments": "Deployment",
    "deploy": "Deployment",
    "replicaset": "ReplicaSet",
    "replicasets": "ReplicaSet",
    "rs": "ReplicaSet",
    "statefulset": "StatefulSet",
    "statefulsets": "StatefulSet",
    "sts": "StatefulSet",
}
REVISION = "deployment.kubernetes.io/revision"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


@dataclass(frozen=True)
class ScaleTarget:
    namespace: str
    kind: str
    name: str
    replicas: int

    @classmethod
    def parse(cls, text: str, default_namespace: str) -> ScaleTarget:
        """`[NAMESPACE/]KIND/NAME=N`, KIND as kubectl spells it (deployment, deploy, rs, ...)."""
        target, sep, count = text.rpartition("=")
        parts = target.split("/")
        if not sep or len(parts) not in (2, 3) or not all(parts):
            raise ValueError(f"expected [NAMESPACE/]KIND/NAME=REPLICAS, got {text!r}")
        namespace = parts[0] if len(parts) == 3 else default_namespace
        kind = SCALE_KINDS.get(parts[-2].lower())
        if kind is None:
            raise ValueError(
                f"{text!r}: cannot scale a {parts[-2]} (deployment, replicaset or statefulset)"
            )
        if not count.isdigit():
            raise ValueError(f"{text!r}: replicas must be a whole number of 0 or more")
        return cls(namespace, kind, parts[-1], int(count))

    def __str__(self) -> str:
        return f"{self.namespace}/{self.kind.lower()}/{self.name}"


@dataclass
class Scaled:
    """What scaling did: one line per target, the pods created, the pods deleted (keys)."""

    summary: list[str] = field(default_factory=list)
    created: list[Json] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def _key(pod: Json) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def _active(pod: Json) -> bool:
    """controller.FilterActivePods: not terminal, not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _owned_by(pod: Json, kind: str, owner: Json) -> bool:
    ref = controller_of(pod)
    if ref is None or ref.get("kind") != kind or ref.get("name") != owner["metadata"]["name"]:
        return False
    uid = owner["metadata"].get("uid")
    return not uid or not ref.get("uid") or ref["uid"] == uid


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _ready(pod: Json) -> tuple[bool, datetime | None]:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True", _time(cond.get("lastTransitionTime"))
    return False, None


def _deletion_cost(pod: Json) -> int:
    raw = (pod["metadata"].get("annotations") or {}).get(DELETION_COST)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0  # the API server refuses such a value; a snapshot's pod cannot carry one


def _restarts(pod: Json) -> tuple[int, int]:
    status = pod.get("status") or {}
    regular = max(
        (int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or []), default=0
    )
    sidecars = {
        c["name"]
        for c in (pod.get("spec") or {}).get("initContainers") or []
        if c.get("restartPolicy") == "Always"
    }
    sidecar = max(
        (
            int(c.get("restartCount") or 0)
            for c in status.get("initContainerStatuses") or []
            if c.get("name") in sidecars
        ),
        default=0,
    )
    return regular, sidecar


def _log_rank(t: datetime, now: datetime) -> int:
    seconds = (now - t).total_seconds()
    return int(math.log2(seconds * 1e9)) if seconds > 0 else -1


def _newer_first(
    a: datetime | None, b: datetime | None, now: datetime, uids: tuple[str, str]
) -> int:
    """afterOrZero, in powers of two of the time until `now` (LogarithmicScaleDown); the uid
    breaks a tie of the same power."""
    if a is None or b is None:
        return -1 if a is None else 1
    diff = _log_rank(a, now) - _log_rank(b, now)
    if diff == 0:
        return -1 if uids[0] < uids[1] else 1
    return -1 if diff < 0 else 1


def deletion_order(pods: Sequence[Json], related: Iterable[Json], now: datetime) -> list[Json]:
    """`pods` in the order the ReplicaSet controller deletes them (first deleted first);
    `related` are the workload's active pods whose count per node ranks doubled-up pods."""
    on_node = Counter((p.get("spec") or {}).get("nodeName", "") for p in related)

    def compare(a: Json, b: Json) -> int:
        na, nb = (
            (a.get("spec") or {}).get("nodeName", ""),
            (b.get("spec") or {}).get("nodeName", ""),
        )
        if na != nb and (not na or not nb):
            return -1 if not na else 1
        pa = _PHASE_ORDER.get((a.get("status") or {}).get("phase", ""), 0)
        pb = _PHASE_ORDER.get((b.get("status") or {}).get("phase", ""), 0)
        if pa != pb:
            return -1 if pa < pb else 1
        (ra, ta), (rb, tb) = _ready(a), _ready(b)
        if ra != rb:
            return -1 if not ra else 1
        ca, cb = _deletion_cost(a), _deletion_cost(b)
        if ca != cb:
            return -1 if ca < cb else 1
        ka, kb = on_node[na] if na else 0, on_node[nb] if nb else 0
        if ka != kb:
            return -1 if ka > kb else 1
        uids = (a["metadata"].get("uid", ""), b["metadata"].get("uid", ""))
        if ra and rb and ta != tb:
            return _newer_first(ta, tb, now, uids)
        xa, xb = _restarts(a), _restarts(b)
        if xa != xb:
            return -1 if xa > xb else 1
        created = (
            _time(a["metadata"].get("creationTimestamp")),
            _time(b["metadata"].get("creationTimestamp")),
        )
        if created[0] != created[1]:
            return _newer_first(created[0], created[1], now, uids)
        return 0

    return sorted(pods, key=cmp_to_key(compare))


def _find(cluster: ClusterObjects, kind: str, target: ScaleTarget) -> Json | None:
    for obj in cluster.of(kind):
        meta = obj["metadata"]
        if meta["name"] == target.name and meta.get("namespace", "default") == target.namespace:
            return obj
    return None


def _deployment_replica_sets(cluster: ClusterObjects, target: ScaleTarget) -> list[Json]:
    owned = [
        rs
        for rs in cluster.of("ReplicaSet")
        if rs["metadata"].get("namespace", "default") == target.namespace
        and (controller_of(rs) or {}).get("kind") == "Deployment"
        and (controller_of(rs) or {}).get("name") == target.name
    ]
    if not owned:
        raise UnknownWorkloadError(
            f"--scale {target}: the snapshot has no ReplicaSet of a Deployment "
            f"{target.namespace}/{target.name} (Deployments are found through their ReplicaSets)"
        )

    def revision(rs: Json) -> int:
        raw = (rs["metadata"].get("annotations") or {}).get(REVISION, "0")
        return int(raw) if str(raw).isdigit() else 0

    return sorted(owned, key=revision, reverse=True)


class _Scaler:
    def __init__(self, cluster: ClusterObjects, now: datetime) -> None:
        self.cluster = cluster
        self.now = now
        self.pods = [p for p in cluster.of("Pod") if _active(p)]
        self.names = {_key(p) for p in cluster.of("Pod")}
        self.out = Scaled()

    def owned(self, kind: str, owner: Json) -> list[Json]:
        return [p for p in self.pods if _owned_by(p, kind, owner)]

    def replica_set(self, target: ScaleTarget, rs: Json, related: list[Json]) -> None:
        pods = self.owned("ReplicaSet", rs)
        rs.setdefault("spec", {})["replicas"] = target.replicas
        self.out.summary.append(f"{target}: {len(pods)} -> {target.replicas}")
        if target.replicas < len(pods):
            doomed = deletion_order(pods, related, self.now)[: len(pods) - target.replicas]
            self.out.deleted += [_key(p) for p in doomed]
            return
        meta = rs["metadata"]
        namespace = meta.get("namespace", "default")
        owner = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        serial = 0
        for _ in range(target.replicas - len(pods)):
            while f"{namespace}/{meta['name']}-{serial:05d}" in self.names:
                serial += 1
            name = f"{meta['name']}-{serial:05d}"
            self.names.add(f"{namespace}/{name}")
            pod = pod_from_template(rs["spec"]["template"], namespace, name, owner=owner)
            pod["metadata"]["generateName"] = f"{meta['name']}-"
            self.out.created.append(pod)

    def stateful_set(self, target: ScaleTarget, sts: Json) -> None:
        name = sts["metadata"]["name"]
        start = int(((sts.get("spec") or {}).get("ordinals") or {}).get("start") or 0)
        by_ordinal: dict[int, Json] = {}
        for pod in self.owned("StatefulSet", sts):
            suffix = pod["metadata"]["name"].removeprefix(f"{name}-")
            if suffix.isdigit():
                by_ordinal[int(suffix)] = pod
        sts.setdefault("spec", {})["replicas"] = target.replicas
        self.out.summary.append(f"{target}: {len(by_ordinal)} -> {target.replicas}")
        wanted = range(start, start + target.replicas)
        for ordinal in sorted(by_ordinal, reverse=True):
            if ordinal not in wanted:
                self.out.deleted.append(_key(by_ordinal[ordinal]))
        claims = {_key(c) for c in self.cluster.of("PersistentVolumeClaim")}
        for ordinal in wanted:
            if ordinal in by_ordinal:
                continue
            pod, pod_claims = stateful_pod(sts, ordinal)
            for claim in pod_claims:
                if _key(claim) not in claims:
                    self.cluster.add(claim)
            self.out.created.append(pod)

    def scale(self, target: ScaleTarget) -> None:
        if target.kind == "Deployment":
            sets = _deployment_replica_sets(self.cluster, target)
            older = [
                rs["metadata"]["name"]
                for rs in sets[1:]
                if (rs.get("spec") or {}).get("replicas") or self.owned("ReplicaSet", rs)
            ]
            if older:
                raise WorkloadError(
                    f"--scale {target}: a rollout is in progress (ReplicaSets {', '.join(older)} "
                    "still have pods); scale its ReplicaSets with --scale replicaset/NAME=N"
                )
            self.replica_set(
                target, sets[0], [p for rs in sets for p in self.owned("ReplicaSet", rs)]
            )
            return
        obj = _find(self.cluster, target.kind, target)
        if obj is None:
            raise UnknownWorkloadError(
                f"--scale {target}: the snapshot has no {target.kind} "
                f"{target.namespace}/{target.name}"
            )
        if target.kind == "StatefulSet":
            self.stateful_set(target, obj)
        else:
            self.replica_set(target, obj, self.owned("ReplicaSet", obj))


def scale(cluster: ClusterObjects, targets: Iterable[ScaleTarget], now: datetime) -> Scaled:
    """Scales each target in turn; `now` is the time the ranking measures ages from."""
    scaler = _Scaler(cluster, now)
    for target in targets:
        scaler.scale(target)
    return scaler.out
