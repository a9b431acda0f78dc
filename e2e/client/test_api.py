"""KubeApi calls against the real API server: bind, status patch, delete, events, leases."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.api.errors import ApiError
from scheduler.api.objects import replace_pod
from scheduler.api.parse import parse_pod
from scheduler.client import (
    EventRecorder,
    KubeApi,
    LeaderElectionConfig,
    LeaderElector,
    RestClient,
)

MakePod = Callable[..., dict[str, Any]]
MakeNode = Callable[..., dict[str, Any]]


def poll(check: Callable[[], Any], timeout: float = 30, what: str = "condition") -> Any:
    """Returns check()'s first truthy value, polling with a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached in {timeout}s")
        time.sleep(0.05)


def test_bind_assigns_the_node(
    kube_api: KubeApi, namespace: str, make_pod: MakePod, make_node: MakeNode
) -> None:
    node = make_node()["metadata"]["name"]
    pod = parse_pod(make_pod("to-bind"))

    kube_api.bind(pod, node)

    bound = kube_api.get_pod(namespace, "to-bind")
    assert bound is not None and bound.node_name == node
    # A second bind is refused: the pod is already assigned.
    with pytest.raises(ApiError) as info:
        kube_api.bind(pod, node)
    assert info.value.conflict


def test_bind_of_a_replaced_pod_fails_on_the_uid_precondition(
    kube_api: KubeApi, make_pod: MakePod, make_node: MakeNode
) -> None:
    node = make_node()["metadata"]["name"]
    pod = parse_pod(make_pod("replaced"))
    stale = replace_pod(pod, uid=str(uuid.uuid4()))
    with pytest.raises(ApiError) as info:
        kube_api.bind(stale, node)
    assert info.value.conflict
    current = kube_api.get_pod(pod.namespace, pod.name)
    assert current is not None and current.node_name == ""


def test_status_patch_sets_pod_scheduled_false_and_nominated_node(
    kube_api: KubeApi, namespace: str, make_pod: MakePod
) -> None:
    pod = parse_pod(make_pod("unschedulable"))
    kube_api.patch_pod_status(
        pod,
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes are available: 3 Insufficient cpu.",
                        "lastProbeTime": None,
                        "lastTransitionTime": "2025-01-01T00:00:00Z",
                    }
                ],
                "nominatedNodeName": "node-7",
            }
        },
    )
    updated = kube_api.get_pod(namespace, "unschedulable")
    assert updated is not None
    cond = updated.condition("PodScheduled")
    assert cond is not None
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    assert cond.message == "0/3 nodes are available: 3 Insufficient cpu."
    assert updated.nominated_node_name == "node-7"

    # nominatedNodeName: null clears it again (what preemption's "clear" sends).
    kube_api.patch_pod_status(updated, {"status": {"nominatedNodeName": None}})
    cleared = kube_api.get_pod(namespace, "unschedulable")
    assert cleared is not None and cleared.nominated_node_name == ""


def test_delete_requires_the_same_uid(kube_api: KubeApi, namespace: str, make_pod: MakePod) -> None:
    pod = parse_pod(make_pod("victim"))
    with pytest.raises(ApiError) as info:
        kube_api.delete_pod(replace_pod(pod, uid=str(uuid.uuid4())), grace_period_seconds=0)
    assert info.value.conflict
    assert kube_api.get_pod(namespace, "victim") is not None

    kube_api.delete_pod(pod, grace_period_seconds=0)
    poll(lambda: kube_api.get_pod(namespace, "victim") is None, what="pod deleted")
    with pytest.raises(ApiError) as gone:
        kube_api.delete_pod(pod)
    assert gone.value.not_found


def test_events_are_created_and_repeats_become_a_series(
    rest: RestClient, kube_api: KubeApi, namespace: str, make_pod: MakePod
) -> None:
    pod = parse_pod(make_pod("evented"))
    recorder = EventRecorder(kube_api, reporting_instance="kube-pysched-e2e")
    recorder.start()
    try:
        recorder.eventf(pod, None, "Normal", "Scheduled", "Binding", "Successfully assigned")
        for _ in range(3):
            recorder.eventf(pod, None, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes")
        assert recorder.flush(30)
    finally:
        recorder.stop()
    # Three writes (Scheduled, FailedScheduling, its series' patch), or two when the patch,
    # sent by another sender at the same moment, found no Event yet and created it with its
    # series, and the plain create then found it there (client-go drops that one too).
    assert recorder.sent in (2, 3)
    assert (recorder.failed, recorder.dropped) == (0, 0)

    events = rest.get(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
        {"fieldSelector": f"regarding.name=evented,regarding.uid={pod.uid}"},
    )["items"]
    by_reason = {e["reason"]: e for e in events}
    assert set(by_reason) == {"Scheduled", "FailedScheduling"}
    scheduled = by_reason["Scheduled"]
    assert scheduled["type"] == "Normal"
    assert scheduled["action"] == "Binding"
    assert scheduled["note"] == "Successfully assigned"
    assert scheduled["reportingController"] == "kube-pysched"
    assert scheduled["reportingInstance"] == "kube-pysched-e2e"
    assert scheduled["regarding"]["kind"] == "Pod"
    assert scheduled["regarding"]["resourceVersion"] == pod.resource_version
    assert by_reason["FailedScheduling"]["series"]["count"] == 2
    # The same events through the core/v1 view (what `kubectl describe pod` shows).
    core = rest.get(f"/api/v1/namespaces/{namespace}/events")["items"]
    assert {e["reason"] for e in core} >= {"Scheduled", "FailedScheduling"}


def test_leader_election_one_leads_the_other_waits_then_takes_over(
    kube_api: KubeApi, namespace: str
) -> None:
    def config(identity: str) -> LeaderElectionConfig:
        return LeaderElectionConfig(
            namespace, "kube-pysched", identity, lease_duration=4, renew_deadline=3, retry_period=1
        )

    leading = {"a": threading.Event(), "b": threading.Event()}
    stopped = {"a": threading.Event(), "b": threading.Event()}
    electors = {
        name: LeaderElector(
            kube_api,
            config(name),
            on_started_leading=leading[name].set,
            on_stopped_leading=stopped[name].set,
        )
        for name in ("a", "b")
    }
    electors["a"].start()
    try:
        assert leading["a"].wait(30)
        electors["b"].start()
        # b sees a's lease and waits for it.
        poll(lambda: electors["b"].leader() == "a", what="b observing a")
        assert not leading["b"].is_set()
        lease = kube_api.get_lease(namespace, "kube-pysched")
        assert lease["spec"]["holderIdentity"] == "a"
        assert lease["spec"]["leaseDurationSeconds"] == 4

        electors["a"].stop()  # releases the lease
        assert stopped["a"].is_set()
        assert leading["b"].wait(30)
        lease = kube_api.get_lease(namespace, "kube-pysched")
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        for elector in electors.values():
            elector.stop()
