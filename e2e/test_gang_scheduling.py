"""Gang scheduling (docs/gang.md) with kube-pysched as a real process on the local control
plane: scheduler-plugins' PodGroups, its Coscheduling plugin enabled the way scheduler-plugins'
sample configuration enables it, plain pods joining by label (as Kubeflow, KubeRay and
Spark-operator create them) and a Job's pods.

Each test has nodes of its own (a label only its pods select), so other tests' nodes and pods
never change the arithmetic. kube-scheduler has no PodGroups (scheduler-plugins' build would be
the oracle; the SchedulingGangs benchmark builds it), so these assert the behaviour docs/gang.md
states.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.podgroups import (
    CRDS,
    GROUP,
    LABEL,
    PLURAL,
    PODGROUP_CRD,
    VERSION,
    Controller,
    apply_crds,
    controllers_fixture,  # noqa: F401 (the `controllers` fixture)
    create_podgroup,
)
from e2e.preemption_scenarios import create_priority_classes, delete_priority_classes
from e2e.pysched import Pysched, default_config, metric_value
from e2e.workload import pod_manifest, pod_scheduled_condition

NODE_LABEL = "e2e.kube-pysched.io/gang-test"
PEERING_CRDS = CRDS / "kopf.dev_peerings.yaml"


def gang_config(scheduler_name: str) -> dict[str, Any]:
    """scheduler-plugins' sample: Coscheduling at every point it has, and as the QueueSort."""
    return default_config(
        profiles=[
            {
                "schedulerName": scheduler_name,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "*"}],
                    },
                },
            }
        ]
    )


@pytest.fixture(scope="module")
def podgroup_crd(api_client: k8s.ApiClient) -> None:
    apply_crds(api_client, PODGROUP_CRD)


@pytest.fixture
def gang_env(
    podgroup_crd: None,
    kwok_nodes: NodeFactory,
    pysched: Callable[..., Pysched],
) -> Callable[[int, str], tuple[str, str, Pysched]]:
    """(nodes, cpu per node) -> (scheduler name, node label value, the running scheduler)."""

    def make(count: int, cpu: str) -> tuple[str, str, Pysched]:
        tag = uuid.uuid4().hex[:8]
        kwok_nodes(count, cpu=cpu, labels={NODE_LABEL: tag})
        name = f"gang-{tag}"
        return name, tag, pysched(gang_config(name))

    return make


def member(name: str, group: str, scheduler: str, tag: str, cpu: str = "1") -> dict[str, Any]:
    return pod_manifest(
        name,
        scheduler_name=scheduler,
        cpu=cpu,
        labels={LABEL: group},
        node_selector={NODE_LABEL: tag},
    )


def bound(core_v1: k8s.CoreV1Api, namespace: str, group: str) -> list[k8s.V1Pod]:
    pods = core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL}={group}").items
    return [p for p in pods if p.spec.node_name]


def wait_bound(core_v1: k8s.CoreV1Api, namespace: str, group: str, count: int, what: str) -> None:
    """Polls until `count` members of `group` are bound (a minute at most)."""
    wait_for(
        lambda: len(bound(core_v1, namespace, group)) == count or "not all bound",
        timeout=60,
        what=what,
    )


def members(core_v1: k8s.CoreV1Api, namespace: str, group: str) -> list[k8s.V1Pod]:
    return list(core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL}={group}").items)


def all_waiting_with(prefix: str, pods: list[k8s.V1Pod], count: int) -> bool | str:
    """Every one of `count` pods is unbound with PodScheduled=False saying `prefix`..."""
    if len(pods) != count:
        return f"{len(pods)} of {count} pods"
    for pod in pods:
        if pod.spec.node_name:
            return f"{pod.metadata.name} bound"
        cond = pod_scheduled_condition(pod)
        if cond is None or cond.status != "False" or not (cond.message or "").startswith(prefix):
            return f"{pod.metadata.name}: {cond.message if cond else 'no condition'}"
    return True


def test_a_group_is_held_until_its_members_exist_then_starts_together(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    gang_env: Callable[[int, str], tuple[str, str, Pysched]],
) -> None:
    scheduler, tag, proc = gang_env(4, "4")
    create_podgroup(api_client, namespace, "train", 10)
    for i in range(9):
        core_v1.create_namespaced_pod(namespace, member(f"train-{i}", "train", scheduler, tag))

    def nine_held() -> bool | str:
        gated = metric_value(proc.metrics(), "scheduler_pending_pods", {"queue": "gated"})
        return gated == 9 or f"gated pods: {gated}"

    wait_for(nine_held, timeout=30, what="nine members held at PreEnqueue")
    assert bound(core_v1, namespace, "train") == []
    core_v1.create_namespaced_pod(namespace, member("train-9", "train", scheduler, tag))
    wait_bound(core_v1, namespace, "train", 10, "the whole group bound")
    attempts = metric_value(
        proc.metrics(), "kube_pysched_gang_attempts_total", {"result": "scheduled"}
    )
    assert attempts == 1.0  # one step of the loop placed all ten


def test_a_group_that_cannot_fit_places_none_then_retries_when_nodes_come(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    gang_env: Callable[[int, str], tuple[str, str, Pysched]],
    kwok_nodes: NodeFactory,
) -> None:
    scheduler, tag, _ = gang_env(2, "4")
    create_podgroup(api_client, namespace, "big", 10)
    for i in range(10):
        core_v1.create_namespaced_pod(namespace, member(f"big-{i}", "big", scheduler, tag))
    prefix = f"PodGroup {namespace}/big: "
    wait_for(
        lambda: all_waiting_with(prefix, members(core_v1, namespace, "big"), 10),
        timeout=60,
        what="every member Unschedulable with the group's message",
    )
    message = pod_scheduled_condition(members(core_v1, namespace, "big")[0]).message
    assert "of 10 members would fit, none is held; " in message
    assert "Insufficient cpu" in message
    kwok_nodes(1, cpu="4", labels={NODE_LABEL: tag})
    wait_bound(core_v1, namespace, "big", 10, "the group bound whole once a third node came")


def test_a_group_that_times_out_retries_holding_nothing_until_it_fits(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Callable[..., Pysched],
    podgroup_crd: None,
) -> None:
    """kube-pysched's form of "a group timing out": its members never wait at Permit for one
    another (docs/gang.md), so a group that cannot reach its quorum fails at once, holds
    nothing, backs off (podGroupBackoffSeconds) and is retried when the backoff ends - with no
    cluster event in between - until it fits."""
    tag = uuid.uuid4().hex[:8]
    kwok_nodes(1, cpu="4", labels={NODE_LABEL: tag})
    scheduler = f"gang-{tag}"
    config = gang_config(scheduler)
    config["profiles"][0]["pluginConfig"] = [
        {"name": "Coscheduling", "args": {"podGroupBackoffSeconds": 2}}
    ]
    proc = pysched(config)
    create_podgroup(api_client, namespace, "late", 3, scheduleTimeoutSeconds=5)
    for i in range(3):
        core_v1.create_namespaced_pod(namespace, member(f"late-{i}", "late", scheduler, tag, "2"))

    def failed_attempts() -> float:
        value = metric_value(
            proc.metrics(), "kube_pysched_gang_attempts_total", {"result": "unschedulable"}
        )
        return value or 0.0

    def retried() -> bool | str:
        assert bound(core_v1, namespace, "late") == []  # never part of the group bound
        return failed_attempts() >= 3 or f"{failed_attempts()} failed attempts"

    wait_for(retried, timeout=60, what="the group retried after each backoff")
    kwok_nodes(1, cpu="4", labels={NODE_LABEL: tag})
    wait_bound(core_v1, namespace, "late", 3, "the group bound whole once it fits")


def test_two_groups_that_fit_one_at_a_time_never_deadlock(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    gang_env: Callable[[int, str], tuple[str, str, Pysched]],
) -> None:
    """8 CPUs, two groups of six 1-CPU pods: each fits alone, not both. Twenty rounds with the
    members created in a random interleaving: one group is bound whole, the other holds
    nothing and says why; once the first is gone the second is bound whole."""
    scheduler, tag, _ = gang_env(2, "4")
    rng = random.Random(17)
    for round_no in range(20):
        play_round(api_client, core_v1, namespace, scheduler, tag, round_no, rng)


def play_round(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    scheduler: str,
    tag: str,
    round_no: int,
    rng: random.Random,
) -> None:
    groups = (f"a{round_no}", f"b{round_no}")
    for group in groups:
        create_podgroup(api_client, namespace, group, 6)
    order = [(g, i) for g in groups for i in range(6)]
    rng.shuffle(order)
    for group, i in order:
        core_v1.create_namespaced_pod(namespace, member(f"{group}-{i}", group, scheduler, tag))

    def one_whole_other_nothing() -> bool | str:
        counts = {g: len(bound(core_v1, namespace, g)) for g in groups}
        if sorted(counts.values()) != [0, 6]:
            return f"bound per group: {counts}"
        loser = next(g for g in groups if counts[g] == 0)
        return all_waiting_with(
            f"PodGroup {namespace}/{loser}: ", members(core_v1, namespace, loser), 6
        )

    wait_for(one_whole_other_nothing, timeout=60, what=f"round {round_no}: one group whole")
    counts = {g: len(bound(core_v1, namespace, g)) for g in groups}
    winner = next(g for g in groups if counts[g] == 6)
    loser = next(g for g in groups if g != winner)
    core_v1.delete_collection_namespaced_pod(
        namespace, label_selector=f"{LABEL}={winner}", grace_period_seconds=0
    )
    wait_bound(core_v1, namespace, loser, 6, f"round {round_no}: the second group bound whole")
    core_v1.delete_collection_namespaced_pod(
        namespace, label_selector=f"{LABEL}={loser}", grace_period_seconds=0
    )
    wait_for(
        lambda: not any(members(core_v1, namespace, g) for g in groups) or "pods left",
        timeout=60,
        what=f"round {round_no}: pods gone",
    )


def test_a_jobs_pods_join_a_group_unchanged(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    gang_env: Callable[[int, str], tuple[str, str, Pysched]],
) -> None:
    """A batch/v1 Job whose template carries the group label (what Kubeflow's and Spark's
    operators do): the Job controller creates the pods, kube-pysched binds all four at once."""
    scheduler, tag, _ = gang_env(2, "4")
    create_podgroup(api_client, namespace, "job", 4)
    template = member("unused", "job", scheduler, tag)
    for key in ("apiVersion", "kind"):
        template.pop(key, None)
    template["metadata"].pop("name")
    template["spec"]["restartPolicy"] = "Never"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "gang-job"},
        "spec": {"parallelism": 4, "completions": 4, "template": template},
    }
    k8s.BatchV1Api(api_client).create_namespaced_job(namespace, job)
    wait_bound(core_v1, namespace, "job", 4, "the Job's four pods bound")


def test_podgroup_status_follows_the_group(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    gang_env: Callable[[int, str], tuple[str, str, Pysched]],
    controllers: Callable[..., Controller],
) -> None:
    """kube-pysched and kube-pysched-controller together: a group below quorum stays Pending
    with its members counted; once placed whole and run by kwok it is Running, all scheduled."""
    apply_crds(api_client, PEERING_CRDS)
    controllers("controller", "--peering-name", f"e2e-gang-{uuid.uuid4().hex[:6]}")
    scheduler, tag, _ = gang_env(2, "4")
    create_podgroup(api_client, namespace, "status", 4)
    custom = k8s.CustomObjectsApi(api_client)

    def status_is(**want: Any) -> Callable[[], bool | str]:
        def check() -> bool | str:
            group = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "status")
            status = group.get("status") or {}
            got = {k: status.get(k) for k in want}
            return got == want or f"status {status}"

        return check

    for i in range(3):
        core_v1.create_namespaced_pod(namespace, member(f"status-{i}", "status", scheduler, tag))
    wait_for(status_is(phase="Pending"), timeout=30, what="Pending below minMember")
    core_v1.create_namespaced_pod(namespace, member("status-3", "status", scheduler, tag))
    wait_for(
        status_is(phase="Running", scheduled=4, running=4),
        timeout=60,
        what="Running with all four scheduled and running",
    )


def test_a_node_deleted_under_a_running_group(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    gang_env: Callable[[int, str], tuple[str, str, Pysched]],
) -> None:
    """Four 2-CPU members (minMember 4) on three 4-CPU nodes: a node holding members is
    deleted, its pods with it (as PodGC does), their owner creates replacements (here the test),
    and the new members join the group whose others still run: placed without a quorum of
    their own, never on the deleted node."""
    scheduler, tag, _ = gang_env(3, "4")
    create_podgroup(api_client, namespace, "resilient", 4)
    for i in range(4):
        core_v1.create_namespaced_pod(
            namespace, member(f"resilient-{i}", "resilient", scheduler, tag, cpu="2")
        )
    wait_bound(core_v1, namespace, "resilient", 4, "the group bound")
    placed = bound(core_v1, namespace, "resilient")
    victim_node = placed[0].spec.node_name
    lost = [p.metadata.name for p in placed if p.spec.node_name == victim_node]
    core_v1.delete_node(victim_node)
    for name in lost:
        core_v1.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    wait_for(
        lambda: len(members(core_v1, namespace, "resilient")) == 4 - len(lost) or "not gone",
        timeout=30,
        what="the lost members gone",
    )
    for name in lost:
        core_v1.create_namespaced_pod(
            namespace, member(f"{name}-new", "resilient", scheduler, tag, cpu="2")
        )

    def replaced() -> bool | str:
        pods = bound(core_v1, namespace, "resilient")
        if any(p.spec.node_name == victim_node for p in pods):
            return "a pod on the deleted node"
        return len(pods) == 4 or f"{len(pods)} of 4 bound"

    wait_for(replaced, timeout=60, what="the replacements bound")


@pytest.mark.parametrize("victims_form_a_gang", [False, True], ids=["lone-victims", "gang-victims"])
def test_a_higher_priority_group_preempts_once_for_all_its_members(
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    gang_env: Callable[[int, str], tuple[str, str, Pysched]],
    victims_form_a_gang: bool,
) -> None:
    """Two 2-CPU nodes full of four 1-CPU low-priority pods; a high-priority group of two
    1-CPU members (minMember 2) preempts in one step: lone victims, only the two it needs
    (each member nominated where one left); a running gang (minMember 4), the whole gang
    (docs/gang.md: a gang goes whole or not at all). Then the group binds."""
    scheduler, tag, _ = gang_env(2, "2")
    classes = create_priority_classes(api_client, (100, 1000))
    try:
        low_labels = {LABEL: "low"} if victims_form_a_gang else {"e2e-low": tag}
        if victims_form_a_gang:
            create_podgroup(api_client, namespace, "low", 4)
        for i in range(4):
            manifest = pod_manifest(
                f"low-{i}",
                scheduler_name=scheduler,
                cpu="1",
                labels=low_labels,
                node_selector={NODE_LABEL: tag},
                priority_class=classes[100],
            )
            core_v1.create_namespaced_pod(namespace, manifest)
        selector = ",".join(f"{k}={v}" for k, v in low_labels.items())

        def low_pods() -> list[k8s.V1Pod]:
            pods = core_v1.list_namespaced_pod(namespace, label_selector=selector).items
            return [p for p in pods if p.metadata.deletion_timestamp is None]

        wait_for(
            lambda: sum(1 for p in low_pods() if p.spec.node_name) == 4 or "not all bound",
            timeout=60,
            what="the low-priority pods bound",
        )
        create_podgroup(api_client, namespace, "urgent", 2)
        for i in range(2):
            manifest = member(f"urgent-{i}", "urgent", scheduler, tag)
            manifest["spec"]["priorityClassName"] = classes[1000]
            core_v1.create_namespaced_pod(namespace, manifest)
        wait_bound(core_v1, namespace, "urgent", 2, "the preempting group bound")
        survivors = 0 if victims_form_a_gang else 2
        wait_for(
            lambda: len(low_pods()) == survivors or f"{len(low_pods())} low pods left",
            timeout=60,
            what="the victims gone",
        )
        assert all(p.spec.node_name for p in low_pods())
    finally:
        delete_priority_classes(api_client, classes)
