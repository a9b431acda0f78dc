"""VolumeRestrictions: in-tree disk conflicts, ReadWriteOncePod claims (with the AddPod/RemovePod
extension preemption uses), events and hints (cases after volume_restrictions_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.status import Code
from scheduler.plugins import volume_restrictions
from scheduler.plugins.volume_restrictions.plugin import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
)
from scheduler.testing import FakeHandle, build_plugin, make_node, make_snapshot, run_plugin
from tests.plugins.storage_fixtures import claim, inline, pod, pvc_volume

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
RWOP = ("ReadWriteOncePod",)


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return inline(f"gce-{pd}", "gcePersistentDisk", pdName=pd, readOnly=read_only)


def ebs(volume_id: str) -> dict[str, Any]:
    return inline(f"ebs-{volume_id}", "awsElasticBlockStore", volumeID=volume_id)


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return inline(f"iscsi-{iqn}", "iscsi", iqn=iqn, readOnly=read_only, targetPortal="p")


def rbd(monitors: list[str], image: str, read_only: bool = False) -> dict[str, Any]:
    return inline(
        f"rbd-{image}", "rbd", monitors=monitors, pool="rbd", image=image, readOnly=read_only
    )


def handle_with(*existing: Pod) -> FakeHandle:
    handle = FakeHandle(snap=make_snapshot([make_node("n1"), make_node("n2")], existing))
    handle.static_storage.add(
        claim("rwop", access_modes=RWOP),
        claim("rwo"),
        claim("rwop", namespace="other", access_modes=RWOP),
    )
    return handle


def filter_message(new: Pod, *existing: Pod) -> str | None:
    """Filter's message on n1 (None: passes), with `existing` running there."""
    handle = handle_with(*existing)
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle)
    result = run_plugin(plugin, new, handle.snap)
    status = result.filter_statuses.get("n1")
    return None if status is None else status.message()


@pytest.mark.parametrize(
    ("new", "existing", "conflict"),
    [
        (gce("a"), gce("a"), True),
        (gce("a"), gce("b"), False),
        (gce("a", True), gce("a", True), False),
        (gce("a", True), gce("a"), True),
        (ebs("v1"), ebs("v1"), True),
        (ebs("v1"), ebs("v2"), False),
        (iscsi("iqn-1"), iscsi("iqn-1"), True),
        (iscsi("iqn-1", True), iscsi("iqn-1", True), False),
        (iscsi("iqn-1"), iscsi("iqn-2"), False),
        (rbd(["m1", "m2"], "img"), rbd(["m2", "m3"], "img"), True),
        (rbd(["m1"], "img"), rbd(["m2"], "img"), False),
        (rbd(["m1"], "img"), rbd(["m1"], "other"), False),
        (rbd(["m1"], "img", True), rbd(["m1"], "img", True), False),
        (gce("a"), ebs("a"), False),
    ],
)
def test_disk_conflicts(new: dict[str, Any], existing: dict[str, Any], conflict: bool) -> None:
    running = pod("running", existing, node="n1")
    message = filter_message(pod("p", new), running)
    assert message == (ERR_REASON_DISK_CONFLICT if conflict else None)


def test_disk_conflict_is_unschedulable_not_unresolvable() -> None:
    handle = handle_with(pod("running", gce("a"), node="n1"))
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle)
    result = run_plugin(plugin, pod("p", gce("a")), handle.snap)
    status = result.filter_statuses["n1"]
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert result.feasible == ["n2"]
    assert status.message() == "node(s) had no available disk"


def test_pods_without_restricted_volumes_are_skipped() -> None:
    handle = handle_with()
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle)
    for p in (pod("plain"), pod("rwo", pvc_volume("rwo")), pod("free", pvc_volume("rwop"))):
        _, status = plugin.pre_filter(CycleState(), p, handle.snap.list())
        assert status is not None and status.code == Code.SKIP


def test_missing_claim_is_unresolvable() -> None:
    handle = handle_with()
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle)
    _, status = plugin.pre_filter(CycleState(), pod("p", pvc_volume("gone")), handle.snap.list())
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'persistentvolumeclaim "gone" not found'


def test_read_write_once_pod_claim_in_use_rejects_every_node() -> None:
    holder = pod("holder", pvc_volume("rwop"), node="n2")
    handle = handle_with(holder)
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle)
    result = run_plugin(plugin, pod("p", pvc_volume("rwop")), handle.snap)
    assert result.pre_filter_status is None
    assert result.feasible == []
    status = result.filter_statuses["n1"]
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == ERR_REASON_RWOP_CONFLICT
    assert ERR_REASON_RWOP_CONFLICT == (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod"
    )


def test_same_claim_name_in_another_namespace_is_no_conflict() -> None:
    handle = handle_with(pod("holder", pvc_volume("rwop"), namespace="other", node="n2"))
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle)
    _, status = plugin.pre_filter(CycleState(), pod("p", pvc_volume("rwop")), handle.snap.list())
    assert status is not None and status.code == Code.SKIP


def test_remove_pod_and_add_pod_move_the_conflict_count() -> None:
    """Preemption removes the holder in a dry run: the claim frees; adding it back takes it."""
    holder = pod("holder", pvc_volume("rwop"), node="n2")
    handle = handle_with(holder)
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle)
    new = pod("p", pvc_volume("rwop"))
    state = CycleState()
    plugin.pre_filter(state, new, handle.snap.list())
    n1, n2 = handle.snap.list()
    assert plugin.filter(state, new, n1).message() == ERR_REASON_RWOP_CONFLICT
    dry_run = state.clone()
    ext = plugin.pre_filter_extensions()
    assert ext.remove_pod(dry_run, new, holder, n2) is None
    assert plugin.filter(dry_run, new, n1) is None
    assert plugin.filter(state, new, n1) is not None  # the clone did not share the count
    assert ext.add_pod(dry_run, new, holder, n2) is None
    assert plugin.filter(dry_run, new, n1).message() == ERR_REASON_RWOP_CONFLICT
    # A pod without the claim changes nothing.
    assert ext.remove_pod(dry_run, new, pod("x", pvc_volume("rwo"), node="n2"), n2) is None
    assert plugin.filter(dry_run, new, n1) is not None


def test_extensions_and_filter_without_prefilter_state_are_errors() -> None:
    handle = handle_with()
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle)
    info = handle.snap.list()[0]
    status = plugin.pre_filter_extensions().add_pod(CycleState(), pod("p"), pod("q"), info)
    assert status.code == Code.ERROR
    assert status.message() == 'cannot read "PreFilterVolumeRestrictions" from cycleState'
    assert plugin.filter(CycleState(), pod("p"), info).code == Code.ERROR


def test_events() -> None:
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle_with())
    events = {(e.event.resource, e.event.action_type) for e in plugin.events_to_register()}
    assert events == {
        (EventResource.ASSIGNED_POD, ActionType.DELETE),
        (EventResource.NODE, ActionType.ADD),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
    }


def test_pod_deleted_hint() -> None:
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle_with())
    p = pod("p", gce("a"), pvc_volume("data"))
    hint = plugin.is_schedulable_after_pod_deleted
    assert hint(p, pod("d", gce("a"), node="n1"), None) == Q
    assert hint(p, pod("d", pvc_volume("data"), node="n1"), None) == Q
    assert hint(p, pod("d", gce("b"), pvc_volume("x"), node="n1"), None) == SKIP
    assert hint(p, pod("d", gce("a"), namespace="other", node="n1"), None) == SKIP


def test_claim_added_hint() -> None:
    plugin = build_plugin(volume_restrictions.SPEC, handle=handle_with())
    p = pod("p", pvc_volume("data"))
    hint = plugin.is_schedulable_after_claim_added
    assert hint(p, None, claim("data")) == Q
    assert hint(p, None, claim("data", namespace="other")) == SKIP
    assert hint(p, None, claim("unrelated")) == SKIP
