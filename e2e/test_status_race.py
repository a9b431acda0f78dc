"""The status race on a real API server: a bound pod never keeps a stale PodScheduled=False.

A failed attempt queues a PodScheduled=False status patch; when the pod is retried and bound
while that patch is still on its way, the patch must not land after the binding. A slow
admission webhook holds every status write in the namespace for a second, which is what a
loaded API server or a slow webhook does to them in production. Each round: a filler takes the
node's only cpu, the target fails (its patch is now held in admission), the filler is deleted,
the target is retried at once and bound. Stopping kube-pysched drains its API dispatcher, so
everything it would still write has been written when the conditions are read.

Before the fix every round left the target bound with PodScheduled=False. kube-scheduler runs
the same rounds as the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client as k8s

from e2e.admission import SlowWrites, slow_pod_status_writes
from e2e.cluster import ControlPlane, wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.test_scheduling import Factory, create, profile_config, unique, wait_bound
from e2e.workload import pod_manifest, pod_scheduled_condition

ROUNDS = 5
STATUS_WRITE_DELAY = 1.0


def fail_then_bind(
    core: k8s.CoreV1Api,
    namespace: str,
    writes: SlowWrites,
    scheduler: str,
    selector: dict[str, str],
    r: int,
) -> str:
    """One round on a fresh 1-cpu node; returns the bound target's name."""
    filler, target = f"filler-{r}", f"target-{r}"
    create(
        core,
        namespace,
        [pod_manifest(filler, scheduler_name=scheduler, cpu="1", node_selector=selector)],
    )
    wait_bound(core, namespace, [filler])
    create(
        core,
        namespace,
        [pod_manifest(target, scheduler_name=scheduler, cpu="1", node_selector=selector)],
    )
    wait_for(
        lambda: writes.seen(target) or "no status write for the target yet",
        timeout=60,
        interval=0.02,
        what=f"{target}'s PodScheduled=False write in admission",
    )
    core.delete_namespaced_pod(filler, namespace, grace_period_seconds=0)
    wait_bound(core, namespace, [target])
    return target


@pytest.mark.parametrize("scheduler", ["kube-pysched", "kube-scheduler"])
def test_bound_pods_never_keep_a_stale_unschedulable_condition(
    scheduler: str,
    local_control_plane: ControlPlane,
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
    tmp_path: Path,
) -> None:
    name = unique(scheduler)
    stop: Callable[[], None]
    if scheduler == "kube-pysched":
        sched = pysched(profile_config(name))

        def stop() -> None:
            assert sched.stop() == 0, "kube-pysched did not stop cleanly"
    else:
        stop = local_control_plane.start_scheduler(profile_config(name), name=name).stop
    targets: list[str] = []
    with slow_pod_status_writes(api_client, namespace, STATUS_WRITE_DELAY, tmp_path) as writes:
        for r in range(ROUNDS):
            selector = {"round": f"{name}-{r}"}
            kwok_nodes(1, cpu="1", memory="4Gi", labels=selector)
            targets.append(fail_then_bind(core_v1, namespace, writes, name, selector, r))
        stop()  # drains what the scheduler would still write

    stale = []
    for target in targets:
        pod = core_v1.read_namespaced_pod(target, namespace)
        assert pod.spec.node_name, f"{target} is not bound"
        cond = pod_scheduled_condition(pod)
        if cond is None or cond.status != "True":
            stale.append(
                f"{target}: {cond.status if cond else None} {cond.message if cond else ''}"
            )
    assert not stale, f"bound pods left with a stale condition: {stale}"
