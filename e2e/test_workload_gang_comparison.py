"""Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1, gate GenericWorkload): the same
scenarios scheduled by kube-scheduler v1.37.2 (the control plane's, schedulerName
default-scheduler) and by kube-pysched's GangScheduling (its own schedulerName), on one local
control plane started with the gate and the beta API served, with the same outcome.

Every scenario has nodes of its own per scheduler (a label only its pods select), all created
before the first scenario runs, so both schedulers see the same cluster and write the same
"0/N nodes are available" texts. Nothing sleeps: a member that must stay pending is checked
once a later plain pod of the same scheduler on the same node is bound (the scheduler has
handled the member's arrival by then), and everything else is polled with a deadline.

The last scenario is workload-aware preemption with three groups: a low-priority gang runs on
every node, then a medium- and a high-priority gang that each need all of them arrive one
right after the other; both schedulers evict the low group and bind the high one, and
kube-pysched evicts each victim once (docs/gang.md, "One eviction per victim").
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import ControlPlane, wait_default_service_account, wait_for
from e2e.cluster.nodes import create_kwok_nodes
from e2e.preemption_scenarios import create_priority_classes, delete_priority_classes
from e2e.pysched import Pysched, default_config
from e2e.workload import pod_manifest, pod_scheduled_condition

GROUP, VERSION, PLURAL = "scheduling.k8s.io", "v1beta1", "podgroups"
GATES = {"GenericWorkload": True}
RUNTIME_CONFIG = {f"{GROUP}/{VERSION}": "true"}
NODE_LABEL = "e2e.kube-pysched.io/workload-gang"
PYSCHED = "kube-pysched-gang"
KUBE_SCHEDULER = "default-scheduler"
#: Scenario -> its nodes per scheduler (2 CPUs each).
SCENARIOS = {"held": 1, "basic": 1, "unfit": 1, "lowered": 1, "three": 4}
CONDITION = "PodGroupInitiallyScheduled"


@dataclass
class Env:
    core: k8s.CoreV1Api
    custom: k8s.CustomObjectsApi


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """The control plane, each (scenario, scheduler) its 2-CPU nodes, kube-pysched running."""
    with ControlPlane(feature_gates=GATES, runtime_config=RUNTIME_CONFIG) as cp:
        client = cp.api_client()
        core = k8s.CoreV1Api(client)
        names = []
        for scenario, count in SCENARIOS.items():
            for scheduler in (KUBE_SCHEDULER, PYSCHED):
                label = {NODE_LABEL: f"{scenario}-{scheduler}"}
                nodes = create_kwok_nodes(
                    core, count, f"{scenario}-{scheduler}-", cpu="2", labels=label
                )
                names += [n.metadata.name for n in nodes]
        wait_for(
            lambda: all(not core.read_node(n).spec.taints for n in names) or "tainted nodes",
            timeout=60,
            what="nodes without the not-ready taint",
        )
        config = default_config(profiles=[{"schedulerName": PYSCHED}])
        workdir = tmp_path_factory.mktemp("pysched")
        pysched = Pysched(
            cp.kubeconfig,
            config,
            workdir=Path(workdir),
            extra_args=["--feature-gates=GenericWorkload=true"],
        ).start()
        try:
            yield Env(core, k8s.CustomObjectsApi(client))
        finally:
            pysched.stop()
            print(f"----- kube-pysched log tail ({pysched.log_path}) -----\n{pysched.tail(60)}")
            client.close()


class Scenario:
    """One scenario run by one scheduler, in a namespace of its own."""

    def __init__(self, env: Env, name: str, scheduler: str) -> None:
        self.env = env
        self.scheduler = scheduler
        self.node_label = {NODE_LABEL: f"{name}-{scheduler}"}
        self.namespace = f"wg-{name}-{uuid.uuid4().hex[:6]}"
        #: Pod uid -> name, of every pod created here (a preempted pod is gone by the end).
        self.uids: dict[str, str] = {}
        env.core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=self.namespace)))
        wait_default_service_account(env.core, self.namespace)

    def pod_group(self, name: str, min_count: int | None, priority_class: str = "") -> None:
        policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
        spec: dict[str, Any] = {"schedulingPolicy": policy}
        if priority_class:
            spec["priorityClassName"] = priority_class
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": spec,
        }
        self.env.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, body
        )

    def set_min_count(self, name: str, min_count: int) -> None:
        patch = {"spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}
        self.env.custom.patch_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name, patch
        )

    def pod(
        self,
        name: str,
        cpu: str,
        group: str | None = None,
        priority_class: str | None = None,
        grace: int = 0,
    ) -> None:
        manifest = pod_manifest(
            name,
            scheduler_name=self.scheduler,
            cpu=cpu,
            node_selector=self.node_label,
            priority_class=priority_class,
        )
        manifest["spec"]["terminationGracePeriodSeconds"] = grace
        if group is not None:
            manifest["spec"]["schedulingGroup"] = {"podGroupName": group}
        created = self.env.core.create_namespaced_pod(self.namespace, manifest)
        self.uids[created.metadata.uid] = name

    def read(self, name: str) -> k8s.V1Pod:
        return self.env.core.read_namespaced_pod(name, self.namespace)

    def wait_bound(self, *names: str) -> None:
        def bound() -> bool | str:
            unbound = [n for n in names if not self.read(n).spec.node_name]
            return not unbound or f"unbound: {unbound}"

        wait_for(bound, timeout=60, what=f"{names} bound by {self.scheduler}")

    def settled(self) -> None:
        """Returns once a plain pod created now is bound: the scheduler has handled every pod
        created before it (a pod it could place would have been placed first)."""
        name = f"sync-{uuid.uuid4().hex[:6]}"
        self.pod(name, "10m")
        self.wait_bound(name)

    def existing(self, names: list[str]) -> list[str]:
        found = {p.metadata.name for p in self.env.core.list_namespaced_pod(self.namespace).items}
        return [n for n in names if n in found]

    def events(self, reason: str) -> list[k8s.EventsV1Event]:
        events = k8s.EventsV1Api(self.env.core.api_client)
        items: list[k8s.EventsV1Event] = events.list_namespaced_event(self.namespace).items
        return [e for e in items if e.reason == reason and e.regarding is not None]

    def preempted_events(self, victims: list[str]) -> tuple[dict[str, list[str]], list[str]]:
        """The preemptors named by each pod's Preempted events (a repeated event once per
        count of its series), once every one of `victims` has one: a second preemptor's
        eviction of the same pod names another preemptor, so it is an Event of its own. A
        preemptor is named by its group (a member's uid is mapped to its group too). Also
        the events' wordings, each uid replaced by its group and the related object's kind
        and name appended: `Preempted by podgroup <high> on node cluster; PodGroup high`."""
        groups = {uid: name.rsplit("-", 1)[0] for uid, name in self.uids.items()}
        listed = self.env.custom.list_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL
        )
        groups.update({g["metadata"]["uid"]: g["metadata"]["name"] for g in listed["items"]})
        found: dict[str, list[str]] = {}
        wordings: set[str] = set()

        def check() -> bool | str:
            found.clear()
            wordings.clear()
            for e in self.events("Preempted"):
                words = (e.note or "").split(" ")
                uid = words[3] if len(words) > 3 else ""
                count = e.series.count if e.series else 1
                found.setdefault(e.regarding.name, []).extend([groups.get(uid, uid)] * count)
                note = " ".join(f"<{groups[w]}>" if w in groups else w for w in words)
                related = f"{e.related.kind} {e.related.name}" if e.related else "none"
                wordings.add(f"{note}; {related}")
            missing = [v for v in victims if v not in found]
            return not missing or f"no Preempted event on {missing}"

        wait_for(check, timeout=60, what=f"Preempted events ({self.scheduler})")
        return {name: sorted(by) for name, by in sorted(found.items())}, sorted(wordings)

    def condition(self, group: str) -> dict[str, Any] | None:
        obj = self.env.custom.get_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, group
        )
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond["type"] == CONDITION:
                found: dict[str, Any] = cond
                return found
        return None

    def wait_condition(self, group: str, status: str) -> dict[str, Any]:
        wait_for(
            lambda: (
                (self.condition(group) or {}).get("status") == status
                or f"condition: {self.condition(group)}"
            ),
            timeout=60,
            what=f"{CONDITION}={status} on {group} ({self.scheduler})",
        )
        found = self.condition(group)
        assert found is not None
        return found


Outcome = dict[str, Any]
Run = Callable[[Scenario], Outcome]


def held_then_placed(s: Scenario) -> Outcome:
    """A gang of minCount 2 holds its first member until the second exists, then places both."""
    s.pod_group("g", 2)
    s.pod("m0", "500m", group="g")
    s.settled()
    first = s.read("m0")
    held = (first.spec.node_name, pod_scheduled_condition(first))
    s.pod("m1", "500m", group="g")
    s.wait_bound("m0", "m1")
    cond = s.wait_condition("g", "True")
    return {"held": held, "condition": (cond["status"], cond["reason"], cond["message"])}


def basic_pod_by_pod(s: Scenario) -> Outcome:
    """A basic group places each member at once: no quorum."""
    s.pod_group("b", None)
    s.pod("b0", "500m", group="b")
    s.wait_bound("b0")
    s.pod("b1", "500m", group="b")
    s.wait_bound("b1")
    return {"bound": sorted(n for n in ("b0", "b1") if s.read(n).spec.node_name)}


def member_conditions(s: Scenario, names: tuple[str, ...]) -> list[tuple[str, str, str]] | str:
    found = []
    for name in names:
        pod = s.read(name)
        if pod.spec.node_name:
            return f"{name} bound"
        cond = pod_scheduled_condition(pod)
        if cond is None or cond.status != "False":
            return f"{name}: no PodScheduled=False yet"
        found.append((cond.status, cond.reason, cond.message))
    return sorted(found)


def unfit(s: Scenario) -> Outcome:
    """A gang that cannot fit places none; its members and its condition say so."""
    s.pod_group("u", 2)
    s.pod("u0", "3", group="u")
    s.pod("u1", "3", group="u")
    names = ("u0", "u1")
    wait_for(
        lambda: isinstance(member_conditions(s, names), list) or str(member_conditions(s, names)),
        timeout=60,
        what=f"both members unschedulable ({s.scheduler})",
    )
    cond = s.wait_condition("u", "False")
    return {
        "members": member_conditions(s, names),
        "condition": (cond["status"], cond["reason"]),
        "condition_message": cond["message"],
    }


def lowered(s: Scenario) -> Outcome:
    """Lowering minCount on a held gang releases it."""
    s.pod_group("l", 3)
    s.pod("l0", "500m", group="l")
    s.pod("l1", "500m", group="l")
    s.settled()
    held = sorted(bool(s.read(n).spec.node_name) for n in ("l0", "l1"))
    s.set_min_count("l", 2)
    s.wait_bound("l0", "l1")
    cond = s.wait_condition("l", "True")
    return {"held": held, "condition": (cond["status"], cond["reason"])}


#: Members per group in "three": one 1500m member per 2-CPU node, so a group needs every node.
GANG = SCENARIOS["three"]
#: The low group's grace period: its pods are still on their nodes, terminating, when the
#: second group preempts, whichever of the two groups the scheduler tried first.
LOW_GRACE = 5


def members_of(group: str) -> list[str]:
    return [f"{group}-{i}" for i in range(GANG)]


def three_groups(s: Scenario) -> Outcome:
    """A low-priority gang runs on every node; a medium- and a high-priority gang, each
    needing every node, are completed one right after the other (the medium group's last
    member first). Who ends up bound, which pods were preempted and how many Preempted events
    each got, and the groups' PodGroupInitiallyScheduled conditions."""
    api = s.env.core.api_client
    classes = create_priority_classes(api, (100, 500, 1000))
    try:
        priority = {"low": classes[100], "medium": classes[500], "high": classes[1000]}
        s.pod_group("low", GANG, priority["low"])
        for name in members_of("low"):
            s.pod(name, "1500m", group="low", priority_class=priority["low"], grace=LOW_GRACE)
        s.wait_bound(*members_of("low"))
        for group in ("medium", "high"):
            s.pod_group(group, GANG, priority[group])
        for i in range(GANG):
            for group in ("medium", "high"):
                s.pod(f"{group}-{i}", "1500m", group=group, priority_class=priority[group])
        s.wait_bound(*members_of("high"))
        wait_for(
            lambda: not (left := s.existing(members_of("low"))) or f"still there: {left}",
            timeout=60,
            what=f"the low group's pods gone ({s.scheduler})",
        )
        preempted, wordings = s.preempted_events(members_of("low"))
        conditions = {}
        for group in ("low", "high"):
            cond = s.wait_condition(group, "True")
            conditions[group] = (cond["status"], cond["reason"])
        left = s.existing(members_of("medium"))
        return {
            "high_bound": sorted(n for n in members_of("high") if s.read(n).spec.node_name),
            "medium_bound": sorted(n for n in left if s.read(n).spec.node_name),
            "victims": sorted(preempted),
            "preempted": preempted,
            "wordings": wordings,
            "conditions": conditions,
        }
    finally:
        delete_priority_classes(api, classes)


RUNS: dict[str, Run] = {
    "held": held_then_placed,
    "basic": basic_pod_by_pod,
    "unfit": unfit,
    "lowered": lowered,
    "three": three_groups,
}


def run_both(env: Env, scenario: str) -> tuple[Outcome, Outcome]:
    run = RUNS[scenario]
    theirs = run(Scenario(env, scenario, KUBE_SCHEDULER))
    ours = run(Scenario(env, scenario, PYSCHED))
    return theirs, ours


def test_a_gang_holds_its_first_member_and_places_both_once_the_second_exists(env: Env) -> None:
    theirs, ours = run_both(env, "held")
    assert theirs == ours
    assert theirs["held"] == (None, None)  # held at PreEnqueue: no condition written
    assert theirs["condition"] == ("True", "Scheduled", "")


def test_a_basic_group_places_each_pod_at_once(env: Env) -> None:
    theirs, ours = run_both(env, "basic")
    assert theirs == ours == {"bound": ["b0", "b1"]}


def test_a_gang_that_cannot_fit_places_none_with_kube_schedulers_messages(env: Env) -> None:
    theirs, ours = run_both(env, "unfit")
    nodes = len(env.core.list_node().items)
    fit_error = (
        f"0/{nodes} nodes are available: 1 Insufficient cpu, {nodes - 1} node(s) didn't match "
        "Pod's node affinity/selector."
    )
    stopped = "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    expected = sorted([("False", "Unschedulable", fit_error), ("False", "Unschedulable", stopped)])
    assert theirs["members"] == expected
    assert ours["members"] == expected
    assert theirs["condition"] == ours["condition"] == ("False", "Unschedulable")
    # Both append their pod group preemption's outcome (docs/gang.md, "Messages").
    assert ours["condition_message"] == theirs["condition_message"]
    assert theirs["condition_message"] == (
        f"{stopped}, pod group preemption: No preemption victims found for incoming preemptor"
    )


def test_lowering_min_count_releases_a_held_gang(env: Env) -> None:
    theirs, ours = run_both(env, "lowered")
    assert theirs == ours == {"held": [False, False], "condition": ("True", "Scheduled")}


def test_three_gangs_preempt_the_same_victims_once_each(env: Env) -> None:
    """Both schedulers evict the low group, bind the high one and leave the medium group
    pending. kube-pysched sends each victim one eviction (one Preempted event, one preemptor)
    whichever group chose it first; kube-scheduler skips only victims its informer already
    shows terminating, so it may send two (its outcome is printed)."""
    theirs, ours = run_both(env, "three")
    print(f"kube-scheduler: {theirs}\nkube-pysched: {ours}")
    assert theirs["high_bound"] == ours["high_bound"] == members_of("high")
    assert theirs["medium_bound"] == ours["medium_bound"] == []
    assert theirs["victims"] == ours["victims"] == members_of("low")
    # Each victim is told which group preempted it, in the same words and with the same
    # related object (kube-scheduler v1.37.2's pod-group preemptor).
    said = {
        f"Preempted by podgroup <{g}> on node cluster; PodGroup {g}" for g in ("medium", "high")
    }
    assert ours["wordings"] and set(ours["wordings"]) <= said, ours["wordings"]
    assert theirs["wordings"] and set(theirs["wordings"]) <= said, theirs["wordings"]
    scheduled = ("True", "Scheduled")
    assert theirs["conditions"] == ours["conditions"] == {"low": scheduled, "high": scheduled}
    assert all(len(by) == 1 for by in ours["preempted"].values()), ours["preempted"]
