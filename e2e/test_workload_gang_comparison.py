"""Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1, gate GenericWorkload): the same
scenarios scheduled by kube-scheduler v1.37.2 (the control plane's, schedulerName
default-scheduler) and by kube-pysched's GangScheduling (its own schedulerName), on one local
control plane started with the gate and the beta API served, with the same outcome.

Every scenario has nodes of its own per scheduler (a label only its pods select), all created
before the first scenario runs, so both schedulers see the same cluster and write the same
"0/N nodes are available" texts. Nothing sleeps: a member that must stay pending is checked
once a later plain pod of the same scheduler on the same node is bound (the scheduler has
handled the member's arrival by then), and everything else is polled with a deadline.
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
from e2e.pysched import Pysched, default_config
from e2e.workload import pod_manifest, pod_scheduled_condition

GROUP, VERSION, PLURAL = "scheduling.k8s.io", "v1beta1", "podgroups"
GATES = {"GenericWorkload": True}
RUNTIME_CONFIG = {f"{GROUP}/{VERSION}": "true"}
NODE_LABEL = "e2e.kube-pysched.io/workload-gang"
PYSCHED = "kube-pysched-gang"
KUBE_SCHEDULER = "default-scheduler"
SCENARIOS = ("held", "basic", "unfit", "lowered")
CONDITION = "PodGroupInitiallyScheduled"


@dataclass
class Env:
    core: k8s.CoreV1Api
    custom: k8s.CustomObjectsApi


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """The control plane, one 2-CPU node per (scenario, scheduler), kube-pysched running."""
    with ControlPlane(feature_gates=GATES, runtime_config=RUNTIME_CONFIG) as cp:
        client = cp.api_client()
        core = k8s.CoreV1Api(client)
        names = []
        for scenario in SCENARIOS:
            for scheduler in (KUBE_SCHEDULER, PYSCHED):
                label = {NODE_LABEL: f"{scenario}-{scheduler}"}
                nodes = create_kwok_nodes(
                    core, 1, f"{scenario}-{scheduler}-", cpu="2", labels=label
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
        env.core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=self.namespace)))
        wait_default_service_account(env.core, self.namespace)

    def pod_group(self, name: str, min_count: int | None) -> None:
        policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"schedulingPolicy": policy},
        }
        self.env.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, body
        )

    def set_min_count(self, name: str, min_count: int) -> None:
        patch = {"spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}
        self.env.custom.patch_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name, patch
        )

    def pod(self, name: str, cpu: str, group: str | None = None) -> None:
        manifest = pod_manifest(
            name, scheduler_name=self.scheduler, cpu=cpu, node_selector=self.node_label
        )
        if group is not None:
            manifest["spec"]["schedulingGroup"] = {"podGroupName": group}
        self.env.core.create_namespaced_pod(self.namespace, manifest)

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


RUNS: dict[str, Run] = {
    "held": held_then_placed,
    "basic": basic_pod_by_pod,
    "unfit": unfit,
    "lowered": lowered,
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
