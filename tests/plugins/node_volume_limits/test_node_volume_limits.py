"""NodeVolumeLimits: counting unique CSI volumes per driver against the CSINode's limits (claims,
unbound claims, ephemeral claims, migrated in-tree volumes, VolumeAttachments), the driver
presence check of VolumeLimitScaling, events and hints (cases after csi_test.go)."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.storage import CSINode, PersistentVolume, PersistentVolumeClaim
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.status import Code, Status
from scheduler.plugins import node_volume_limits
from scheduler.plugins.node_volume_limits.plugin import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
from scheduler.testing import FakeHandle, build_plugin, make_node, make_snapshot, run_plugin
from tests.plugins.storage_fixtures import (
    attachment,
    claim,
    csi_driver,
    csi_node,
    csi_pv,
    ephemeral_volume,
    inline,
    pod,
    pv,
    pvc_volume,
    storage_class,
)

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
DRIVER = "csi.example.com"
EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"


def bound(name: str, driver: str = DRIVER) -> tuple[PersistentVolumeClaim, PersistentVolume]:
    return claim(name, volume=f"pv-{name}"), csi_pv(f"pv-{name}", driver)


def run_on(
    new: Pod,
    existing: tuple[Pod, ...] = (),
    objects: tuple[Any, ...] = (),
    node: CSINode | None = None,
    features: FeatureGates | None = None,
) -> Status | None:
    """Filter's status on node n1 after PreFilter (Skip: PreFilter's status)."""
    handle = FakeHandle(features=features or FeatureGates())
    handle.snap = make_snapshot([make_node("n1")], existing)
    handle.static_storage.add(*objects)
    if node is not None:
        handle.static_storage.add(node)
    plugin = build_plugin(node_volume_limits.SPEC, handle=handle)
    result = run_plugin(plugin, new, handle.snap)
    if result.pre_filter_status is not None:
        return result.pre_filter_status
    return result.filter_statuses["n1"]


def claims_of(*names: str) -> tuple[dict[str, Any], ...]:
    return tuple(pvc_volume(n) for n in names)


def objects_for(*names: str, driver: str = DRIVER) -> tuple[Any, ...]:
    return tuple(obj for n in names for obj in bound(n, driver))


def exceeded(status: Status | None) -> bool:
    return (
        status is not None
        and status.code == Code.UNSCHEDULABLE
        and status.message()
        == ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
        == "node(s) exceed max volume count"
    )


def test_pods_without_countable_volumes_are_skipped() -> None:
    status = run_on(pod("p", {"name": "tmp", "emptyDir": {}}, inline("c", "csi", driver="x")))
    assert status is not None and status.code == Code.SKIP


def test_limit_counts_volumes_of_the_node_pods() -> None:
    objs = objects_for("a", "b", "c")
    limit2 = csi_node("n1", {DRIVER: 2})
    running = pod("r", *claims_of("a", "b"), node="n1")
    assert exceeded(run_on(pod("p", *claims_of("c")), (running,), objs, limit2))
    assert run_on(pod("p", *claims_of("c")), (running,), objs, csi_node("n1", {DRIVER: 3})) is None
    # A volume the node already has does not count again.
    assert run_on(pod("p", *claims_of("a")), (running,), objs, limit2) is None
    # The new pod's own volumes count too.
    assert exceeded(run_on(pod("p", *claims_of("a", "b", "c")), (), objs, limit2))


def test_no_csi_node_or_no_limit_means_no_limit() -> None:
    objs = objects_for("a", "b")
    running = pod("r", *claims_of("a"), node="n1")
    assert run_on(pod("p", *claims_of("b")), (running,), objs, None) is None
    unset = csi_node("n1", {DRIVER: None})
    assert run_on(pod("p", *claims_of("b")), (running,), objs, unset) is None
    # Another driver's limit does not apply.
    other = csi_node("n1", {"other.example.com": 0})
    assert run_on(pod("p", *claims_of("b")), (running,), objs, other) is None


def test_missing_claim_of_the_new_pod_is_unresolvable() -> None:
    status = run_on(pod("p", *claims_of("gone")), node=csi_node("n1", {DRIVER: 5}))
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        'looking up PVC default/gone: persistentvolumeclaim "gone" not found'
    )


def test_missing_claim_of_a_running_pod_is_not_counted() -> None:
    running = pod("r", *claims_of("gone", "a"), node="n1")
    objs = objects_for("a", "b")
    assert run_on(pod("p", *claims_of("b")), (running,), objs, csi_node("n1", {DRIVER: 2})) is None


def test_unbound_claims_count_under_their_class_provisioner() -> None:
    objs = (
        claim("u1", storage_class="fast"),
        claim("u2", storage_class="fast"),
        claim("nocls"),
        storage_class("fast", provisioner=DRIVER, mode="WaitForFirstConsumer"),
    )
    limit1 = csi_node("n1", {DRIVER: 1})
    running = pod("r", *claims_of("u1"), node="n1")
    assert exceeded(run_on(pod("p", *claims_of("u2")), (running,), objs, limit1))
    # The same unbound claim on the node is the same volume.
    assert run_on(pod("p", *claims_of("u1")), (running,), objs, limit1) is None
    # A claim without a class is not counted.
    assert run_on(pod("p", *claims_of("nocls")), (running,), objs, limit1) is None


def test_generic_ephemeral_volumes_count_and_must_belong_to_the_pod() -> None:
    new = pod("p", ephemeral_volume("scratch"), uid="uid-p")
    mine = claim("p-scratch", volume="pv-eph", owner_uid="uid-p")
    objs = (mine, csi_pv("pv-eph", DRIVER), *objects_for("a"))
    running = pod("r", *claims_of("a"), node="n1")
    assert exceeded(run_on(new, (running,), objs, csi_node("n1", {DRIVER: 1})))
    foreign = claim("p-scratch", volume="pv-eph", owner_uid="someone-else")
    status = run_on(new, (), (foreign, csi_pv("pv-eph", DRIVER)), csi_node("n1", {DRIVER: 1}))
    assert status is not None and status.code == Code.ERROR
    assert status.message() == (
        "PVC default/p-scratch was not created for pod default/p (pod is not owner)"
    )


def test_migrated_in_tree_volumes_count_under_their_csi_driver() -> None:
    zone = "topology.kubernetes.io/zone"
    objs = (
        claim("g1", volume="pv-g1"),
        pv("pv-g1", labels={zone: "us-east1-b"}, source="gcePersistentDisk", pdName="d1"),
        claim("g2", volume="pv-g2"),
        pv("pv-g2", source="gcePersistentDisk", pdName="d2"),
    )
    limit1 = csi_node("n1", {GCE: 1})
    running = pod("r", *claims_of("g1"), node="n1")
    assert exceeded(run_on(pod("p", *claims_of("g2")), (running,), objs, limit1))
    # Inline in-tree disks count as well, with the handle the translation gives them.
    ebs = inline("e", "awsElasticBlockStore", volumeID="aws://us-east-1a/vol-1")
    ebs_same = inline("f", "awsElasticBlockStore", volumeID="vol-1")
    ebs_other = inline("g", "awsElasticBlockStore", volumeID="vol-2")
    on_node = pod("r", ebs, node="n1")
    limit_ebs = csi_node("n1", {EBS: 1})
    assert run_on(pod("p", ebs_same), (on_node,), (), limit_ebs) is None
    assert exceeded(run_on(pod("p", ebs_other), (on_node,), (), limit_ebs))
    # Without a CSINode, migration is off: nothing counts (and there is no limit anyway).
    assert run_on(pod("p", ebs_other), (on_node,), (), None) is None


def test_untranslatable_inline_volume_is_an_error() -> None:
    disk = inline("az", "azureDisk", diskName="d", diskURI="uri", kind="Shared")
    status = run_on(pod("p", disk), node=csi_node("n1", {"disk.csi.azure.com": 4}))
    assert status is not None and status.code == Code.ERROR
    assert status.message() == (
        "converting volume(az) from inline to csi: kind(Shared) is not supported in csi migration"
    )


def test_volume_attachments_on_the_node_count_once() -> None:
    objs = (
        *objects_for("a", "b"),
        csi_pv("pv-att", DRIVER),
        attachment("va1", DRIVER, "n1", "pv-att"),
        attachment("va2", DRIVER, "n1", "pv-a"),  # also used by the running pod: counted once
        attachment("va3", DRIVER, "n2", "pv-b"),  # another node
    )
    running = pod("r", *claims_of("a"), node="n1")
    new = pod("p", *claims_of("b"))
    assert exceeded(run_on(new, (running,), objs, csi_node("n1", {DRIVER: 2})))
    assert run_on(new, (running,), objs, csi_node("n1", {DRIVER: 3})) is None


def test_driver_that_must_be_installed() -> None:
    objs = (*objects_for("a"), csi_driver(DRIVER, prevent_if_missing=True))
    status = run_on(pod("p", *claims_of("a")), (), objs, csi_node("n1", {"other": 1}))
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message() == f"{DRIVER} CSI driver is not installed on the node"
    assert run_on(pod("p", *claims_of("a")), (), objs, csi_node("n1", {DRIVER: None})) is None
    off = FeatureGates({"VolumeLimitScaling": False})
    assert run_on(pod("p", *claims_of("a")), (), objs, None, off) is None
    # A driver that does not opt in never needs to be on the node.
    plain = (*objects_for("a"), csi_driver(DRIVER))
    assert run_on(pod("p", *claims_of("a")), (), plain, None) is None


def test_events() -> None:
    plugin = build_plugin(node_volume_limits.SPEC)
    events = {
        (e.event.resource, e.event.action_type, e.hint_fn is not None)
        for e in plugin.events_to_register()
    }
    assert events == {
        (EventResource.CSI_NODE, ActionType.ADD, False),
        (EventResource.CSI_NODE, ActionType.UPDATE, True),
        (EventResource.ASSIGNED_POD, ActionType.DELETE, True),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, True),
        (EventResource.VOLUME_ATTACHMENT, ActionType.DELETE, True),
    }


def test_hints() -> None:
    plugin = build_plugin(node_volume_limits.SPEC)
    p = pod("p", pvc_volume("data"), ephemeral_volume("scratch"))
    # CSINode Update: only a raised limit.
    old = csi_node("n1", {DRIVER: 2})
    hint = plugin.is_schedulable_after_csi_node_updated
    assert hint(p, old, csi_node("n1", {DRIVER: 3})) == Q
    assert hint(p, old, csi_node("n1", {DRIVER: 2, "new.example.com": None})) == SKIP
    assert hint(p, old, csi_node("n1", {DRIVER: 2, "new.example.com": 1})) == Q
    assert hint(p, old, csi_node("n1", {DRIVER: 1})) == SKIP
    # Assigned pod deleted: one with claims or migratable inline volumes.
    deleted = plugin.is_schedulable_after_pod_deleted
    assert deleted(p, pod("d", pvc_volume("x"), node="n1"), None) == Q
    ebs = inline("e", "awsElasticBlockStore", volumeID="vol-1")
    assert deleted(p, pod("d", ebs, node="n1"), None) == Q
    assert deleted(p, pod("d", {"name": "t", "emptyDir": {}}, node="n1"), None) == SKIP
    assert deleted(p, pod("d", pvc_volume("x")), None) == SKIP  # never assigned
    assert deleted(p, pod("d", node="n1"), None) == SKIP
    # PVC Add: the pod's claims, ephemeral ones by their generated name.
    added = plugin.is_schedulable_after_claim_added
    assert added(p, None, claim("data")) == Q
    assert added(p, None, claim("p-scratch")) == Q
    assert added(p, None, claim("data", namespace="other")) == SKIP
    assert added(p, None, claim("other")) == SKIP
    # VolumeAttachment Delete: a pod with a claim, or an inline volume of the attacher.
    va = attachment("va", EBS, "n1", "pv")
    gone = plugin.is_schedulable_after_attachment_deleted
    assert gone(p, va, None) == Q
    assert gone(pod("q", ebs), va, None) == Q
    assert gone(pod("q", ebs), attachment("va", GCE, "n1", "pv"), None) == SKIP
    assert gone(pod("q", {"name": "t", "emptyDir": {}}), va, None) == SKIP


def test_filter_without_prefilter_builds_the_attachment_index() -> None:
    handle = FakeHandle(snap=make_snapshot([make_node("n1")]))
    handle.static_storage.add(
        *objects_for("a", "b"),
        attachment("va", DRIVER, "n1", "pv-a"),
        csi_node("n1", {DRIVER: 1}),
    )
    plugin = build_plugin(node_volume_limits.SPEC, handle=handle)
    info = handle.snap.list()[0]
    assert exceeded(plugin.filter(CycleState(), pod("p", *claims_of("b")), info))
