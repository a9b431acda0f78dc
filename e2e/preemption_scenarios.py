"""Preemption scenarios, each runnable with any scheduler (kube-scheduler or kube-pysched).

A scenario gets an :class:`Env` (its own namespace, its own kwok nodes labelled with a group
unique to the run, the schedulerName under test, PriorityClass names by value) and drives one
situation step by step. Every step waits on what a watch of the namespace has seen
(:class:`Recorder`), never on a sleep. It returns a :data:`Record`: who was nominated where,
which pods were preempted, where every pod ended up, the first FailedScheduling message of each
pending pod and a few ordering facts. Records only use logical names (``node1``,
``<scheduler>``, ``<uid:c>``) so that kube-scheduler's and kube-pysched's compare equal.

The design doc's Examples 1-4 (/work/shared/seeds/pod-preemption-design.txt) use cpu as the
resource: nodes of 10 cpu, A and B (priority 100, 5 cpu) running there with grace periods of
12 s and 6 s, C (priority 1000, 10 cpu), D (priority 50, 2 cpu), E (priority 2000) on node2,
F (priority 2000, 10 cpu).
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from kubernetes import watch

from e2e.cluster import (
    create_kwok_nodes,
    delete_kwok_nodes,
    wait_default_service_account,
    wait_for,
)
from e2e.workload import pod_manifest

Record = dict[str, Any]

#: PriorityClass values used by the scenarios (one class per value, see create_priority_classes).
PRIORITIES = (50, 100, 200, 1000, 2000)

#: Grace periods of the running pods A and B: B goes first, A keeps node1 busy for longer.
GRACE_A = 12
GRACE_B = 6

GROUP_LABEL = "e2e.kube-pysched/preemption-group"
ROLE_LABEL = "e2e.kube-pysched/preemption-role"

#: Reasons a scheduler gives for nodes of other tests (a run's own nodes are Ready, untainted
#: and schedulable, so none of these is ever about them).
FOREIGN_REASONS = (
    "didn't match Pod's node affinity/selector",
    "had untolerated taint",
    "were unschedulable",
    "Preemption is not helpful for scheduling",
)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


# --- PriorityClasses --------------------------------------------------------------------------


def create_priority_classes(
    api: k8s.ApiClient, values: Sequence[int] = PRIORITIES
) -> dict[int, str]:
    """Uniquely named PriorityClasses, one per value; returns value -> name."""
    scheduling = k8s.SchedulingV1Api(api)
    prefix = unique("e2e-preempt")
    names: dict[int, str] = {}
    for value in values:
        name = f"{prefix}-{value}"
        scheduling.create_priority_class(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "globalDefault": False,
                "description": "kube-pysched e2e preemption tests",
            }
        )
        names[value] = name
    return names


def delete_priority_classes(api: k8s.ApiClient, names: Mapping[int, str]) -> None:
    scheduling = k8s.SchedulingV1Api(api)
    for name in names.values():
        try:
            scheduling.delete_priority_class(name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


# --- watching a namespace ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Snap:
    """One observed version of a pod; ``seq`` orders everything seen in the namespace."""

    seq: int
    type: str
    name: str
    uid: str
    node: str | None
    nominated: str | None
    phase: str | None
    deleting: bool
    ready: bool
    disruption: tuple[str, str, str] | None  # (status, reason, message) of DisruptionTarget
    unschedulable: str | None  # message of PodScheduled=False


def _snap(seq: int, type_: str, pod: k8s.V1Pod) -> Snap:
    status = pod.status
    conds = (status.conditions if status else None) or []
    disruption = next(
        (
            (c.status, c.reason or "", c.message or "")
            for c in conds
            if c.type == "DisruptionTarget"
        ),
        None,
    )
    scheduled = next((c for c in conds if c.type == "PodScheduled"), None)
    return Snap(
        seq=seq,
        type=type_,
        name=pod.metadata.name,
        uid=pod.metadata.uid,
        node=pod.spec.node_name or None,
        nominated=(status.nominated_node_name if status else None) or None,
        phase=status.phase if status else None,
        deleting=pod.metadata.deletion_timestamp is not None,
        ready=any(c.type == "Ready" and c.status == "True" for c in conds),
        disruption=disruption,
        unschedulable=scheduled.message
        if scheduled is not None and scheduled.status == "False"
        else None,
    )


class Recorder:
    """Watches the pods of one namespace and keeps every version seen, in order.

    A watch delivers every change (each resourceVersion), so short-lived states - a
    nominatedNodeName that is set and reverted a moment later - are seen too.
    """

    def __init__(self, core: k8s.CoreV1Api, namespace: str) -> None:
        self.core = core
        self.namespace = namespace
        self.relists = 0
        self._snaps: list[Snap] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch-{namespace}", daemon=True)
        self._rv = ""

    def start(self) -> Recorder:
        self._rv = self._list()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _add(self, type_: str, pod: k8s.V1Pod) -> None:
        with self._lock:
            self._snaps.append(_snap(len(self._snaps), type_, pod))

    def _list(self) -> str:
        pods = self.core.list_namespaced_pod(self.namespace)
        for pod in pods.items:
            self._add("LISTED", pod)
        return str(pods.metadata.resource_version)

    def _run(self) -> None:
        rv = self._rv
        while not self._stop.is_set():
            w = watch.Watch()
            try:
                for event in w.stream(
                    self.core.list_namespaced_pod,
                    self.namespace,
                    resource_version=rv,
                    timeout_seconds=1,
                    _request_timeout=10,
                ):
                    pod = event["object"]
                    rv = pod.metadata.resource_version
                    self._add(event["type"], pod)
            except k8s.ApiException as exc:
                if exc.status != 410:
                    raise
                # Only after a long stall; transitions in between may be missed (counted).
                self.relists += 1
                rv = self._list()
            finally:
                w.stop()

    # --- queries ---

    def snaps(self, name: str | None = None) -> list[Snap]:
        with self._lock:
            return [s for s in self._snaps if name is None or s.name == name]

    def latest(self, name: str) -> Snap | None:
        history = self.snaps(name)
        return history[-1] if history else None

    def first(self, name: str, pred: Callable[[Snap], bool]) -> Snap | None:
        return next((s for s in self.snaps(name) if pred(s)), None)

    def exists(self, name: str) -> bool:
        last = self.latest(name)
        return last is not None and last.type != "DELETED"

    def bound(self, name: str) -> Snap | None:
        return self.first(name, lambda s: s.node is not None)

    def deleted(self, name: str) -> Snap | None:
        return self.first(name, lambda s: s.type == "DELETED")

    def nominations(self, name: str) -> list[str | None]:
        """The successive nominatedNodeName values, from the first non-empty one."""
        values: list[str | None] = []
        for s in self.snaps(name):
            if not values and s.nominated is None:
                continue
            if not values or values[-1] != s.nominated:
                values.append(s.nominated)
        return values

    def wait(self, check: Callable[[], bool | str], what: str, timeout: float = 60.0) -> None:
        if not self._thread.is_alive() and not self._stop.is_set():
            raise RuntimeError(f"the watch of {self.namespace} died")
        wait_for(check, timeout=timeout, what=f"{what} (namespace {self.namespace})")


# --- the environment of one scenario run ------------------------------------------------------


@dataclass
class Env:
    core: k8s.CoreV1Api
    api: k8s.ApiClient
    namespace: str
    scheduler_name: str
    priority_classes: Mapping[int, str]
    recorder: Recorder
    group: str = field(default_factory=lambda: unique("pg"))
    nodes: dict[str, str] = field(default_factory=dict)  # logical name -> node name
    uids: dict[str, str] = field(default_factory=dict)  # pod uid -> pod name

    def add_node(self, logical: str, cpu: str = "10") -> str:
        name = f"{self.group}-{logical}"
        self.nodes[logical] = name
        create_kwok_nodes(
            self.core,
            1,
            prefix=f"{name}-",
            cpu=cpu,
            memory="64Gi",
            labels={GROUP_LABEL: self.group, ROLE_LABEL: logical},
        )
        self.nodes[logical] = f"{name}-0"
        return self.nodes[logical]

    def pod_body(
        self,
        name: str,
        cpu: str,
        priority: int,
        *,
        grace: int = 0,
        on: str | None = None,
        only: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """A pod of this run; ``on`` binds it to that logical node directly (a running pod),
        ``only`` restricts it to that logical node, otherwise it may go to any node of the run."""
        selector = {GROUP_LABEL: self.group}
        if only is not None:
            selector[ROLE_LABEL] = only
        body = pod_manifest(
            name,
            scheduler_name=self.scheduler_name,
            cpu=cpu,
            memory="64Mi",
            labels=labels,
            node_selector=selector,
            priority_class=self.priority_classes[priority],
        )
        body["spec"]["terminationGracePeriodSeconds"] = grace
        if on is not None:
            body["spec"]["nodeName"] = self.nodes[on]
        return body

    def create(self, name: str, cpu: str, priority: int, **kwargs: Any) -> None:
        pod = self.core.create_namespaced_pod(
            self.namespace, self.pod_body(name, cpu, priority, **kwargs)
        )
        self.uids[pod.metadata.uid] = name

    def delete(self, name: str, grace: int | None = None) -> None:
        self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=grace)

    # --- waits on the recorder ---

    def wait_running(self, *names: str) -> None:
        def check() -> bool | str:
            waiting = [n for n in names if not self._running(n)]
            return not waiting or f"not Running: {waiting}"

        self.recorder.wait(check, f"{names} Running")

    def _running(self, name: str) -> bool:
        last = self.recorder.latest(name)
        return last is not None and last.phase == "Running" and last.ready

    def wait_nominated(self, name: str, node: str | None = None, timeout: float = 60.0) -> str:
        def check() -> bool | str:
            last = self.recorder.latest(name)
            got = last.nominated if last else None
            if got is not None and (node is None or got == self.nodes[node]):
                return True
            return f"{name} nominated to {got!r}"

        self.recorder.wait(check, f"{name} nominated", timeout)
        return self.logical(self.recorder.latest(name).nominated)  # type: ignore[union-attr]

    def wait_not_nominated(self, name: str, timeout: float = 60.0) -> None:
        def check() -> bool | str:
            last = self.recorder.latest(name)
            return (last is not None and last.nominated is None) or f"{name} still nominated"

        self.recorder.wait(check, f"{name}'s nomination cleared", timeout)

    def wait_preempting(self, *names: str, timeout: float = 60.0) -> None:
        """Victims have their DisruptionTarget condition and are Terminating."""

        def check() -> bool | str:
            waiting = []
            for n in names:
                last = self.recorder.latest(n)
                if last is None or not (last.deleting and last.disruption):
                    waiting.append(n)
            return not waiting or f"not yet preempted: {waiting}"

        self.recorder.wait(check, f"{names} preempted", timeout)

    def wait_unschedulable(self, name: str, timeout: float = 60.0) -> None:
        def check() -> bool | str:
            return self.recorder.first(name, lambda s: s.unschedulable is not None) is not None or (
                f"{name} not attempted yet"
            )

        self.recorder.wait(check, f"{name} marked unschedulable", timeout)

    def wait_bound(self, name: str, timeout: float = 90.0) -> str:
        def check() -> bool | str:
            return self.recorder.bound(name) is not None or f"{name} not bound"

        self.recorder.wait(check, f"{name} bound", timeout)
        return self.logical(self.recorder.bound(name).node)  # type: ignore[union-attr]

    def wait_gone(self, *names: str, timeout: float = 60.0) -> None:
        def check() -> bool | str:
            left = [n for n in names if self.recorder.exists(n)]
            return not left or f"still there: {left}"

        self.recorder.wait(check, f"{names} deleted", timeout)

    # --- normalisation ---

    def logical(self, node: str | None) -> str | None:
        if node is None:
            return None
        return next((k for k, v in self.nodes.items() if v == node), node)

    def normalize(self, text: str) -> str:
        for logical, node in self.nodes.items():
            text = text.replace(node, logical)
        for uid, name in self.uids.items():
            text = text.replace(uid, f"<uid:{name}>")
        return text.replace(self.scheduler_name, "<scheduler>")

    def canonical_message(self, message: str) -> str:
        """A FailedScheduling message without the parts that depend on other tests' nodes.

        The total and the reasons given for nodes outside this run (FOREIGN_REASONS) are
        dropped; the remaining reasons are sorted as kube-scheduler sorts them.
        """
        message = re.sub(r"0/\d+ nodes", "0/N nodes", self.normalize(message))

        def keep(match: re.Match[str]) -> str:
            reasons = [
                r for r in match.group(2).split(", ") if not any(f in r for f in FOREIGN_REASONS)
            ]
            return f"{match.group(1)}{', '.join(sorted(reasons))}."

        return re.sub(r"(nodes are available: )([^.]*)\.", keep, message)

    # --- the record ---

    def preempted_events(
        self, victims: Sequence[str], timeout: float = 30.0
    ) -> dict[str, list[Any]]:
        """The Preempted events (events.k8s.io/v1) on each victim, normalised."""
        events_api = k8s.EventsV1Api(self.api)
        found: dict[str, list[Any]] = {}

        def check() -> bool | str:
            found.clear()
            for e in events_api.list_namespaced_event(self.namespace).items:
                if e.reason != "Preempted" or e.regarding is None:
                    continue
                found.setdefault(e.regarding.name, []).append(
                    {
                        "type": e.type,
                        "action": e.action,
                        "note": self.normalize(e.note or ""),
                        # a repeated event is one Event object with a series count
                        "count": e.series.count if e.series is not None else 1,
                    }
                )
            missing = [v for v in victims if v not in found]
            return not missing or f"no Preempted event on {missing}"

        if victims:
            self.recorder.wait(check, "Preempted events", timeout)
        return {v: sorted(found.get(v, []), key=repr) for v in victims}

    def first_failed_scheduling(self, pods: Sequence[str], timeout: float = 30.0) -> dict[str, str]:
        """The note of each pod's first FailedScheduling event.

        Events, not the PodScheduled condition: both schedulers coalesce status patches that
        wait in their API dispatcher, so a quick retry can replace the first attempt's
        condition before it is written, while every attempt's event is recorded.
        """
        events_api = k8s.EventsV1Api(self.api)
        first: dict[str, tuple[Any, str]] = {}

        def check() -> bool | str:
            first.clear()
            for e in events_api.list_namespaced_event(self.namespace).items:
                if e.reason != "FailedScheduling" or e.regarding is None:
                    continue
                when = e.event_time or e.metadata.creation_timestamp
                name = e.regarding.name
                if name not in first or when < first[name][0]:
                    first[name] = (when, e.note or "")
            missing = [p for p in pods if p not in first]
            return not missing or f"no FailedScheduling event for {missing}"

        if pods:
            self.recorder.wait(check, "FailedScheduling events", timeout)
        return {p: first[p][1] for p in pods}

    def record(self, pods: Sequence[str], **facts: Any) -> Record:
        rec = self.recorder
        victims = sorted(p for p in pods if rec.first(p, lambda s: s.disruption is not None))
        placements: dict[str, str | None] = {}
        for p in pods:
            last = rec.latest(p)
            placements[p] = (
                "deleted" if last is None or last.type == "DELETED" else self.logical(last.node)
            )
        unschedulable = [p for p in pods if rec.first(p, lambda s: s.unschedulable is not None)]
        first_messages = {
            p: self.canonical_message(note)
            for p, note in self.first_failed_scheduling(unschedulable).items()
        }
        disruption = {}
        for v in victims:
            snap = rec.first(v, lambda s: s.disruption is not None)
            assert snap is not None and snap.disruption is not None
            status, reason, message = snap.disruption
            disruption[v] = {"status": status, "reason": reason, "message": self.normalize(message)}
        return {
            "nominated": {
                p: [self.logical(n) for n in rec.nominations(p)] for p in pods if rec.nominations(p)
            },
            "victims": victims,
            "disruption": disruption,
            "preempted_events": self.preempted_events(victims),
            "placements": placements,
            "first_message": first_messages,
            "facts": facts,
        }

    def before(self, first: Snap | None, second: Snap | None) -> bool:
        """Whether ``first`` was seen, and seen before ``second`` (or ``second`` never was)."""
        return first is not None and (second is None or first.seq < second.seq)


@contextmanager
def scenario_env(
    core: k8s.CoreV1Api,
    api: k8s.ApiClient,
    scheduler_name: str,
    priority_classes: Mapping[int, str],
    label: str,
) -> Iterator[Env]:
    """A namespace watched by a Recorder; its nodes and the namespace are deleted afterwards."""
    namespace = unique(f"e2e-pre-{label}"[:50])
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace)))
    recorder: Recorder | None = None
    env: Env | None = None
    try:
        wait_default_service_account(core, namespace)
        recorder = Recorder(core, namespace).start()
        env = Env(core, api, namespace, scheduler_name, priority_classes, recorder)
        yield env
    finally:
        if recorder is not None:
            recorder.stop()
        try:
            core.delete_namespace(namespace)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
        if env is not None:
            delete_kwok_nodes(core, env.nodes.values())


# --- the design doc's examples ----------------------------------------------------------------


def _start_example(env: Env, *, node2_pod_cpu: str | None) -> None:
    """node1 (10 cpu) runs A and B; with ``node2_pod_cpu``, node2 runs E (priority 2000)."""
    env.add_node("node1")
    running = ["a", "b"]
    if node2_pod_cpu is not None:
        env.add_node("node2")
    env.create("a", "5", 100, grace=GRACE_A, on="node1")
    env.create("b", "5", 100, grace=GRACE_B, on="node1")
    if node2_pod_cpu is not None:
        env.create("e", node2_pod_cpu, 2000, on="node2")
        running.append("e")
    env.wait_running(*running)


def _c_preempts(env: Env) -> None:
    env.create("c", "10", 1000)
    env.wait_nominated("c")
    env.wait_preempting("a", "b")


def example1(env: Env) -> Record:
    """C preempts A and B on node1; D (lower than C) must not take the room B leaves."""
    _start_example(env, node2_pod_cpu=None)
    _c_preempts(env)
    env.create("d", "2", 50)
    env.wait_unschedulable("d")
    env.wait_bound("c")
    env.wait_gone("a", "b")
    rec = env.recorder
    return env.record(
        ["a", "b", "c", "d"],
        d_ever_bound=rec.bound("d") is not None,
        b_gone_before_a=env.before(rec.deleted("b"), rec.deleted("a")),
        c_bound_after_a_and_b_gone=env.before(rec.deleted("a"), rec.bound("c"))
        and env.before(rec.deleted("b"), rec.bound("c")),
    )


def example2(env: Env) -> Record:
    """E (node2) goes away while A and B terminate: C takes node2, D then gets node1.

    D may only run on node1 here (nodeSelector): in the doc D is simply tried after C, which
    the queue cannot guarantee once D's backoff is shorter than C's; restricting D keeps the
    example's point (D gets node1 once C's nomination is gone) without the race.
    """
    _start_example(env, node2_pod_cpu="10")
    _c_preempts(env)
    env.create("d", "2", 50, only="node1")
    env.wait_unschedulable("d")
    env.delete("e", grace=0)
    env.wait_bound("c")
    env.wait_bound("d")
    env.wait_gone("a", "b")
    rec = env.recorder
    return env.record(
        ["a", "b", "c", "d", "e"],
        c_bound_while_a_terminating=env.before(rec.bound("c"), rec.deleted("a")),
        d_bound_after_b_gone=env.before(rec.deleted("b"), rec.bound("d")),
    )


def example3(env: Env) -> Record:
    """E leaves 2 cpu on node2: D is bound there while A and B are still terminating."""
    _start_example(env, node2_pod_cpu="8")
    _c_preempts(env)
    env.create("d", "2", 50)
    env.wait_bound("d")
    env.wait_bound("c")
    env.wait_gone("a", "b")
    rec = env.recorder
    return env.record(
        ["a", "b", "c", "d", "e"],
        d_bound_while_a_and_b_terminating=env.before(rec.bound("d"), rec.deleted("b"))
        and env.before(rec.bound("d"), rec.deleted("a")),
        c_bound_after_a_and_b_gone=env.before(rec.deleted("a"), rec.bound("c"))
        and env.before(rec.deleted("b"), rec.bound("c")),
    )


def example4(env: Env) -> Record:
    """F (above C) arrives while A and B terminate: F takes C's place on node1."""
    _start_example(env, node2_pod_cpu=None)
    _c_preempts(env)
    env.create("d", "2", 50)
    env.wait_unschedulable("d")
    env.create("f", "10", 2000)
    env.wait_nominated("f")
    env.wait_bound("f")
    env.wait_not_nominated("c")
    env.wait_gone("a", "b")
    rec = env.recorder
    c_nominated = rec.first("c", lambda s: s.nominated is not None)
    c_cleared = next(
        (s for s in rec.snaps("c") if c_nominated and s.seq > c_nominated.seq and not s.nominated),
        None,
    )
    f_nominated = rec.first("f", lambda s: s.nominated is not None)
    return env.record(
        ["a", "b", "c", "d", "f"],
        c_cleared_after_f_nominated=env.before(f_nominated, c_cleared),
        # The design doc clears C's nomination as F is nominated. kube-scheduler (async
        # preemption) clears it only in F's preemption goroutine, which it skips when all of
        # F's victims are already terminating: C keeps node1 until it is retried once node1
        # has no terminating victims left.
        c_cleared_while_a_terminating=env.before(c_cleared, rec.deleted("a")),
        f_bound_after_a_and_b_gone=env.before(rec.deleted("a"), rec.bound("f"))
        and env.before(rec.deleted("b"), rec.bound("f")),
        d_ever_bound=rec.bound("d") is not None,
        c_ever_bound=rec.bound("c") is not None,
    )


def room_too_small_elsewhere(env: Env) -> Record:
    """G leaves node2 while A and B terminate, but 4 cpu is too little for C: C stays nominated
    to node1 and is bound there once A and B are gone.

    kube-scheduler retries C on G's deletion (NodeResourcesFit answers Queue for any scheduled
    pod's deletion) and the retry fails; kube-pysched's hint answers QueueSkip for a preemptor
    whose victims are still terminating when the freed node cannot take it. The outcome must be
    the same, and C must not be left waiting once its victims have gone.
    """
    _start_example(env, node2_pod_cpu="6")
    env.create("g", "4", 2000, on="node2")
    env.wait_running("g")
    _c_preempts(env)
    env.delete("g", grace=0)
    env.wait_gone("g")
    env.wait_bound("c")
    env.wait_gone("a", "b")
    rec = env.recorder
    return env.record(
        ["a", "b", "c", "e", "g"],
        g_gone_while_a_and_b_terminating=env.before(rec.deleted("g"), rec.deleted("b"))
        and env.before(rec.deleted("g"), rec.deleted("a")),
        c_bound_after_a_and_b_gone=env.before(rec.deleted("a"), rec.bound("c"))
        and env.before(rec.deleted("b"), rec.bound("c")),
    )


# --- PodDisruptionBudget --------------------------------------------------------------------


def pdb_choice(env: Env, *, with_pdb: bool = True) -> Record:
    """x (priority 100) on node1, y (priority 200) on node2; p (1000) needs a whole node.

    Without a PDB node1 is chosen (its victim has the lower priority); with a PDB that allows
    no disruption of x, node2 is chosen (fewest PDB violations comes first).
    """
    env.add_node("node1")
    env.add_node("node2")
    env.create("x", "10", 100, grace=2, on="node1", labels={"app": "guarded"})
    env.create("y", "10", 200, grace=2, on="node2")
    env.wait_running("x", "y")
    if with_pdb:
        create_pdb(env, "guarded", {"app": "guarded"})
    env.create("p", "10", 1000)
    env.wait_nominated("p")
    env.wait_bound("p")
    return env.record(["x", "y", "p"])


def create_pdb(env: Env, name: str, selector: Mapping[str, str]) -> None:
    """A PDB with minAvailable 1; returns once the disruption controller allows 0 disruptions."""
    policy = k8s.PolicyV1Api(env.api)
    policy.create_namespaced_pod_disruption_budget(
        env.namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(selector)}},
        },
    )

    def observed() -> bool | str:
        pdb = policy.read_namespaced_pod_disruption_budget(name, env.namespace)
        st = pdb.status
        if (
            st is not None
            and st.observed_generation == pdb.metadata.generation
            and st.current_healthy == 1
            and st.disruptions_allowed == 0
        ):
            return True
        return f"PDB status {st}"

    wait_for(observed, timeout=60, what=f"PDB {name} observed with disruptionsAllowed=0")


# --- kube-pysched only: asynchronous API calls, and their failure ----------------------------

VICTIM_GRACE = 15


def async_preemption(env: Env, others: int = 40) -> Record:
    """4 victims with a 15 s grace period on a full node; while they terminate, ``others``
    pods for another node are created: they must all be bound before any victim is gone."""
    env.add_node("full", cpu="4")
    env.add_node("free", cpu="64")
    victims = [f"low-{i}" for i in range(4)]
    for v in victims:
        env.create(v, "1", 100, grace=VICTIM_GRACE, on="full")
    env.wait_running(*victims)
    env.create("high", "4", 1000, only="full")
    names = [f"other-{i:02d}" for i in range(others)]
    for name in names:
        env.create(name, "100m", 50, only="free")
    for name in names:
        env.wait_bound(name)
    rec = env.recorder
    still_terminating = [v for v in victims if rec.exists(v) and rec.latest(v).deleting]  # type: ignore[union-attr]
    env.wait_bound("high")
    first_victim_gone = min(
        (s.seq for v in victims if (s := rec.deleted(v)) is not None), default=None
    )
    return {
        **env.record([*victims, "high"]),
        "others_bound_on": sorted({env.logical(rec.bound(n).node) for n in names}),  # type: ignore[union-attr]
        "victims_terminating_when_others_bound": still_terminating,
        "others_bound_before_first_victim_gone": first_victim_gone is not None
        and all(rec.bound(n).seq < first_victim_gone for n in names),  # type: ignore[union-attr]
    }


def _deny_dry_run(env: Env, pod: str) -> bool | str:
    """True when a dry-run DELETE of ``pod`` is rejected by admission."""
    try:
        env.core.delete_namespaced_pod(pod, env.namespace, dry_run="All")
    except k8s.ApiException as exc:
        if exc.status in (403, 422):
            return True
        raise
    return f"dry-run DELETE of {pod} still allowed"


@contextmanager
def protected_pods(env: Env, probe: str) -> Iterator[Callable[[], None]]:
    """A ValidatingAdmissionPolicy (+ binding) denying DELETE of this namespace's pods
    labelled ``protected: "true"``. Yields a function lifting it (it waits until a dry-run
    DELETE of ``probe`` is allowed again); it is lifted on exit in any case."""
    admission = k8s.AdmissionregistrationV1Api(env.api)
    name = unique("e2e-protect")
    scope = {"matchLabels": {"kubernetes.io/metadata.name": env.namespace}}
    admission.create_validating_admission_policy(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "namespaceSelector": scope,
                    "objectSelector": {"matchLabels": {"protected": "true"}},
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["DELETE"],
                            "resources": ["pods"],
                        }
                    ],
                },
                "validations": [
                    {"expression": "false", "message": "protected pod", "reason": "Forbidden"}
                ],
            },
        }
    )
    lifted = False

    def lift() -> None:
        nonlocal lifted
        if lifted:
            return
        lifted = True
        for delete in (
            admission.delete_validating_admission_policy_binding,
            admission.delete_validating_admission_policy,
        ):
            try:
                delete(name)
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise

        def allowed() -> bool | str:
            denied = _deny_dry_run(env, probe)
            return denied is not True or "DELETE still denied"

        wait_for(allowed, timeout=60, what="the deletion policy lifted")

    try:
        admission.create_validating_admission_policy_binding(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": name},
                "spec": {
                    "policyName": name,
                    "validationActions": ["Deny"],
                    "matchResources": {"namespaceSelector": scope},
                },
            }
        )
        wait_for(lambda: _deny_dry_run(env, probe), timeout=60, what="the deletion policy active")
        yield lift
    finally:
        lift()


def failed_preemption(env: Env, metrics: Callable[[], dict[str, float]]) -> Record:
    """The only victim cannot be deleted (admission denies it): the preemption goroutine fails,
    the nomination is reverted and the preemptor retried; once deletion is allowed again the
    preemptor gets the node. ``metrics`` returns the scheduler's counters of interest."""
    env.add_node("node1")
    env.create("guarded", "10", 100, grace=2, on="node1", labels={"protected": "true"})
    env.wait_running("guarded")
    rec = env.recorder
    with protected_pods(env, "guarded") as lift:
        before = metrics()
        env.create("p", "10", 1000)

        def failed_and_retried() -> bool | str:
            now = metrics()
            errors = now["errors"] - before["errors"]
            attempts = now["attempts"] - before["attempts"]
            nominations = rec.nominations("p")
            if errors >= 1 and attempts >= 2 and nominations[:2] == [env.nodes["node1"], None]:
                return True
            return f"errors +{errors}, attempts +{attempts}, nominations {nominations}"

        rec.wait(failed_and_retried, "a failed preemption, reverted and retried")
        during = metrics()
        guarded = rec.latest("guarded")
        nominations = [env.logical(n) for n in rec.nominations("p")]
        lift()
    env.wait_bound("p")
    env.wait_gone("guarded")
    return {
        **env.record(["guarded", "p"]),
        "errors": during["errors"] - before["errors"],
        "attempts": during["attempts"] - before["attempts"],
        "nominations_while_denied": nominations,
        "guarded_while_denied": {
            "exists": guarded is not None and guarded.type != "DELETED",
            "deleting": guarded is not None and guarded.deleting,
        },
    }
