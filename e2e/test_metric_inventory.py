"""kube-pysched exports kube-scheduler's metric families: same names, types and label names.

The same small workload (pods bound, one unschedulable, one preemption) runs through an extra
kube-scheduler of the local control plane and through kube-pysched, each with its own
schedulerName, nodes and leader-election Lease. Both /metrics are then scraped and parsed with
prometheus_client's parser. kube-scheduler only exposes a labelled family once it has a child,
so its output after the workload is the inventory: every `scheduler_*` family in it must exist
in kube-pysched's output with the same type and the same label names, except the few in
ALLOWED_MISSING. `leader_election_master_status` and client-go's `rest_client_*` families that
kube-pysched implements are compared the same way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from e2e.cluster import ControlPlane, wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.cluster.readiness import get_text, tls_context
from e2e.preemption_scenarios import create_priority_classes, delete_priority_classes
from e2e.pysched import default_config
from e2e.test_scheduling import Factory, unique, wait_bound, wait_unschedulable
from e2e.workload import pod_manifest

#: kube-scheduler families kube-pysched need not export, each with the reason.
ALLOWED_MISSING: dict[str, str] = {}

#: client-go families kube-pysched implements (compared as the scheduler_* ones are; a
#: workload without retries leaves kube-scheduler's rest_client_request_retries_total empty,
#: hence unexported, so that one is compared when present). client-go's exec-plugin and
#: transport-cache families describe Go's transport and are not implemented.
REST_CLIENT_FAMILIES = (
    "rest_client_requests_total",
    "rest_client_request_duration_seconds",
    "rest_client_rate_limiter_duration_seconds",
    "rest_client_request_size_bytes",
    "rest_client_response_size_bytes",
)
OPTIONAL_FAMILIES = ("rest_client_request_retries_total",)
LEADER_ELECTION_FAMILIES = ("leader_election_master_status",)

Inventory = dict[str, tuple[str, frozenset[str], str]]


def inventory(text: str) -> Inventory:
    """Family name -> (type, label names, help) of an exposition text.

    prometheus_client strips `_total` from counter family names; the name a user queries is
    used here (with `_total` for counters). Label names come from the samples (`le` and
    `quantile` are the histogram's and summary's own).
    """
    result: Inventory = {}
    for family in text_string_to_metric_families(text):
        name = family.name
        if family.type == "counter" and not name.endswith("_total"):
            name += "_total"
        labels: set[str] = set()
        for sample in family.samples:
            labels.update(k for k in sample.labels if k not in ("le", "quantile"))
        previous = result.get(name)
        if previous is not None:
            labels |= previous[1]
        result[name] = (family.type, frozenset(labels), family.documentation)
    return result


def wanted(name: str) -> bool:
    return (
        name.startswith("scheduler_")
        or name in REST_CLIENT_FAMILIES + OPTIONAL_FAMILIES + LEADER_ELECTION_FAMILIES
    )


def differences(reference: Inventory, ours: Inventory) -> list[str]:
    """Human-readable lines, one per family kube-pysched lacks or exports differently.

    A family with no samples in our output (a labelled family without children) still counts
    as present when the type matches; its label names are then unknown and not compared. HELP
    texts (with component-base's "[ALPHA] " stability prefix) must be the same too.
    """
    lines = []
    for name in sorted(n for n in reference if wanted(n)):
        kind, labels, help_text = reference[name]
        if name in ALLOWED_MISSING:
            continue
        if name not in ours:
            lines.append(f"missing  {name} ({kind}, labels {sorted(labels)})")
            continue
        our_kind, our_labels, our_help = ours[name]
        if our_kind != kind:
            lines.append(f"type     {name}: kube-scheduler {kind}, kube-pysched {our_kind}")
        elif our_labels and our_labels != labels:
            lines.append(
                f"labels   {name}: kube-scheduler {sorted(labels)}, "
                f"kube-pysched {sorted(our_labels)}"
            )
        if our_help != help_text:
            lines.append(
                f"help     {name}:\n    kube-scheduler {help_text!r}"
                f"\n    kube-pysched   {our_help!r}"
            )
    return lines


@pytest.fixture
def priorities(api_client: k8s.ApiClient) -> Iterator[dict[int, str]]:
    names = create_priority_classes(api_client, (100, 1000))
    try:
        yield names
    finally:
        delete_priority_classes(api_client, names)


def _workload(
    core: k8s.CoreV1Api,
    namespace: str,
    scheduler_name: str,
    group: str,
    priorities: dict[int, str],
) -> None:
    """Two low-priority pods fill the group's 2-CPU node, one pod can never fit, then a
    high-priority pod preempts a low one and is bound."""
    prefix = scheduler_name[:20]
    low = [f"{prefix}-low-{i}" for i in range(2)]
    for name in low:
        core.create_namespaced_pod(
            namespace,
            pod_manifest(
                name,
                scheduler_name=scheduler_name,
                cpu="900m",
                node_selector={"g": group},
                priority_class=priorities[100],
            ),
        )
    wait_bound(core, namespace, low)
    huge = f"{prefix}-huge"
    core.create_namespaced_pod(
        namespace,
        pod_manifest(huge, scheduler_name=scheduler_name, cpu="20", node_selector={"g": group}),
    )
    wait_unschedulable(core, namespace, huge)
    high = f"{prefix}-high"
    core.create_namespaced_pod(
        namespace,
        pod_manifest(
            high,
            scheduler_name=scheduler_name,
            cpu="900m",
            node_selector={"g": group},
            priority_class=priorities[1000],
        ),
    )
    wait_bound(core, namespace, [high])


def _leader_config(scheduler_name: str, namespace: str, lease: str) -> dict[str, Any]:
    return default_config(
        leaderElection={
            "leaderElect": True,
            "resourceNamespace": namespace,
            "resourceName": lease,
        },
        profiles=[{"schedulerName": scheduler_name}],
    )


def test_pysched_exports_kube_schedulers_metric_families(
    local_control_plane: ControlPlane,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
    priorities: dict[int, str],
    tmp_path: Path,
) -> None:
    ks_name, py_name = unique("ks"), unique("pysched")
    ks_group, py_group = unique("g"), unique("g")
    kwok_nodes(1, cpu="2", labels={"g": ks_group})
    kwok_nodes(1, cpu="2", labels={"g": py_group})

    # kube-scheduler's RBAC role only lets it update a Lease named kube-scheduler.
    ks = local_control_plane.start_scheduler(
        _leader_config(ks_name, namespace, "kube-scheduler"), name=unique("kube-scheduler")
    )
    try:
        ours = pysched(_leader_config(py_name, namespace, unique("lease")))
        _workload(core_v1, namespace, ks_name, ks_group, priorities)
        _workload(core_v1, namespace, py_name, py_group, priorities)
        context = tls_context(local_control_plane.ca_cert)

        def scraped_leader() -> bool | str:
            text = get_text(ks.metrics_url, context)
            return "leader_election_master_status{" in text or "no leader status yet"

        wait_for(scraped_leader, timeout=30, what="kube-scheduler's leader_election status")
        time.sleep(1)  # the async metric recorder flushes every second
        ks_text = get_text(ks.metrics_url, context)
    finally:
        ks.stop()
    py_text = ours.metrics()
    (tmp_path / "kube-scheduler.metrics").write_text(ks_text)
    (tmp_path / "kube-pysched.metrics").write_text(py_text)

    reference, mine = inventory(ks_text), inventory(py_text)
    for name in REST_CLIENT_FAMILIES + LEADER_ELECTION_FAMILIES:
        assert name in reference, f"kube-scheduler does not export {name}; update the test"
    diff = differences(reference, mine)
    stale = sorted(n for n in ALLOWED_MISSING if n in mine)
    assert not diff and not stale, (
        f"kube-pysched's metric families differ from kube-scheduler's "
        f"(scrapes in {tmp_path}):\n  "
        + "\n  ".join(diff + [f"allowed missing but exported: {n}" for n in stale])
    )
    assert mine["leader_election_master_status"][:2] == ("gauge", frozenset({"name"}))
    assert 'leader_election_master_status{name="' in py_text
