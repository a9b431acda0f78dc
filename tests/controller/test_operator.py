"""The reconcile (controller.operator.PodGroupController) over fake indices and a fake API:
writes only on change, one event per transition, the release of a finished group, the
newest-known status between the index and our own writes, retries after API errors."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from prometheus_client import generate_latest

from controller.metrics import Metrics
from controller.operator import PodGroupController
from controller.podgroup import (
    FINISHED,
    PENDING,
    RUNNING,
    SCHEDULING,
    Group,
    Member,
    Status,
)

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
KEY = ("ns", "g")


class FakeApi:
    """Holds one PodGroup body; patches bump its resourceVersion as the API server does."""

    def __init__(self, *, keeps_scheduled: bool = True) -> None:
        self.body: dict[str, Any] = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"namespace": "ns", "name": "g", "uid": "u", "resourceVersion": "10"},
            "spec": {"minMember": 3},
        }
        self.keeps_scheduled = keeps_scheduled
        self.patches: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str]] = []
        self.fail_patches = 0

    def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> Any:
        if self.fail_patches:
            self.fail_patches -= 1
            raise RuntimeError("API unavailable")
        self.patches.append(dict(status))
        merged = {**self.body.get("status", {}), **status}
        if not self.keeps_scheduled:
            merged.pop("scheduled", None)
        meta = self.body["metadata"]
        self.body = {
            **self.body,
            "metadata": {**meta, "resourceVersion": str(int(meta["resourceVersion"]) + 1)},
            "status": merged,
        }
        return self.body

    def delete_pod(self, namespace: str, name: str, uid: str) -> bool:
        self.deleted.append((name, uid))
        return True


class Harness:
    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self.events: list[tuple[str, str, str]] = []
        self.groups: dict[tuple[str, str], list[Group]] = {KEY: [Group.from_body(api.body)]}
        self.pods: dict[tuple[str, str], list[Member]] = {KEY: []}
        self.controller = PodGroupController(
            api,
            post_event=lambda g, kind, reason, message: self.events.append((kind, reason, message)),
            clock=lambda: NOW,
        )
        self.controller.bind(self.groups, self.pods)

    def watch_catches_up(self) -> None:
        """The index receives the object our last patch produced."""
        self.groups[KEY] = [Group.from_body(self.api.body)]

    def reconcile(self) -> Status:
        asyncio.run(self.controller.reconcile(KEY))
        current = self.controller.current(KEY)
        assert current is not None
        return current.status

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events]


def members(*phases: str, bound: bool = True) -> list[Member]:
    return [
        Member(f"p{i}", f"u{i}", phase, "n1" if bound else "") for i, phase in enumerate(phases)
    ]


def test_walks_pending_scheduling_running_with_one_event_each() -> None:
    h = Harness(FakeApi())
    h.pods[KEY] = members("Running", "Running", "Running")
    assert h.reconcile().phase == PENDING
    # The index has not seen our write yet: the reconcile still starts from Pending.
    assert h.reconcile().phase == SCHEDULING
    h.watch_catches_up()
    status = h.reconcile()
    assert status.phase == RUNNING
    assert (status.scheduled, status.running) == (3, 3)
    assert h.reasons() == [PENDING, SCHEDULING, RUNNING]
    assert h.events[-1][2].startswith("PodGroup ns/g: Scheduling -> Running; 3 members")
    assert h.api.patches[1]["scheduleStartTime"] == "2026-05-01T12:00:00Z"


def test_no_write_and_no_event_when_nothing_changed() -> None:
    h = Harness(FakeApi())
    h.pods[KEY] = members("Running")
    h.reconcile()
    h.watch_catches_up()
    h.reconcile()
    h.reconcile()
    assert len(h.api.patches) == 1
    assert h.reasons() == [PENDING]
    sample = generate_latest(h.controller.metrics.registry).decode()
    assert 'kube_pysched_controller_reconciles_total{result="unchanged"} 2.0' in sample
    assert 'kube_pysched_controller_podgroups{phase="Pending"} 1.0' in sample


def test_a_stale_index_copy_never_repeats_a_transition() -> None:
    """Two reconciles before the watch catches up: the second sees our own write."""
    h = Harness(FakeApi())
    h.pods[KEY] = members("Pending", "Pending", "Pending", bound=False)
    h.reconcile()  # -> Pending
    h.reconcile()  # -> Scheduling
    h.reconcile()  # stays Scheduling (index still says no phase)
    assert h.reasons() == [PENDING, SCHEDULING]
    assert len(h.api.patches) == 2


def test_finished_group_releases_pending_unbound_members_once() -> None:
    h = Harness(FakeApi())
    h.api.body["status"] = {"phase": RUNNING, "scheduled": 3, "running": 3}
    h.watch_catches_up()
    done = members("Succeeded", "Succeeded", "Succeeded")
    waiting = [Member("extra", "ux", "Pending"), Member("bound", "ub", "Pending", "n1")]
    h.pods[KEY] = done + waiting
    status = h.reconcile()
    assert status.phase == FINISHED
    assert h.api.deleted == [("extra", "ux")]
    assert h.reasons() == [FINISHED, "Released"]
    assert "Released 1 pending unbound member(s) of the finished group: extra" in h.events[-1][2]
    # The pod is gone from the index once deleted: nothing more to release, nothing to write.
    h.pods[KEY] = [*done, waiting[1]]
    h.watch_catches_up()
    h.reconcile()
    assert h.api.deleted == [("extra", "ux")]
    assert len(h.api.patches) == 1
    sample = generate_latest(h.controller.metrics.registry).decode()
    assert "kube_pysched_controller_released_pods_total 1.0" in sample


def test_a_crd_without_status_scheduled_does_not_cause_endless_writes() -> None:
    h = Harness(FakeApi(keeps_scheduled=False))
    h.pods[KEY] = members("Running")
    h.reconcile()
    h.watch_catches_up()
    assert not h.controller.scheduled_kept
    h.reconcile()
    assert len(h.api.patches) == 1


def test_deleted_group_is_forgotten() -> None:
    h = Harness(FakeApi())
    h.reconcile()
    assert KEY in h.controller.phases
    del h.groups[KEY]
    asyncio.run(h.controller.reconcile(KEY))
    assert KEY not in h.controller.phases
    assert h.controller.current(KEY) is None


def test_a_failed_write_is_retried() -> None:
    api = FakeApi()
    api.fail_patches = 1
    h = Harness(api)
    h.controller.retry_initial = 0.01

    async def run() -> None:
        await h.controller.reconcile(KEY)
        assert api.patches == []
        # Poll (deadline: wait_for below) for the retry's write.
        while not api.patches:
            await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(run(), timeout=10))
    assert api.patches[0]["phase"] == PENDING


def test_pod_moved_between_groups_reconciles_both() -> None:
    controller = PodGroupController(FakeApi(), post_event=lambda *a: None)
    assert controller.pod_moved("u1", ("ns", "a")) == [("ns", "a")]
    assert controller.pod_moved("u1", ("ns", "a")) == [("ns", "a")]
    assert controller.pod_moved("u1", ("ns", "b")) == [("ns", "b"), ("ns", "a")]
    assert controller.pod_moved("u1", None) == [("ns", "b")]
    assert controller.pod_moved("u1", None) == []


def test_metrics_registry_is_per_controller() -> None:
    first = Metrics(dict)
    second = Metrics(dict)
    first.reconciles.labels(result="changed").inc()
    assert 'result="changed"' not in generate_latest(second.registry).decode()
