"""VolumeZone, VolumeRestrictions and NodeVolumeLimits on the local control plane: each
scenario run by kube-scheduler and by kube-pysched on node groups of their own, with the same
outcome (placement where the volumes make one node the only choice, the exact PodScheduled
message of the pod that has to wait). Volumes are pre-bound PV/claim pairs (a PV with a
claimRef, a claim with its volumeName) that kube-controller-manager's PV controller completes.

Until kube-pysched registers the storage plugins instead of their guards, or with
E2E_STORAGE_ONLY=kube-scheduler, only kube-scheduler's half runs and each test reports itself
skipped (see e2e/volumes.py).
"""

from __future__ import annotations

from kubernetes import client as k8s

from e2e.test_scheduling import create, wait_bound, wait_unschedulable
from e2e.volumes import (  # noqa: F401  (the *_fixture names register fixtures)
    CSI_DRIVER,
    NO_PROVISIONER,
    ZONE,
    Sides,
    Storage,
    csi,
    same_outcome,
    sides_fixture,
    storage_fixture,
)


def pending(core: k8s.CoreV1Api, namespace: str, name: str) -> tuple[str, str]:
    cond = wait_unschedulable(core, namespace, name)
    return cond.reason, cond.message


def node_count(core: k8s.CoreV1Api) -> int:
    return len(core.list_node().items)


def fit_message(n: int, reasons: dict[str, int], preemption: dict[str, int]) -> str:
    """kube-scheduler's FitError message: each part's "<count> <reason>" strings sorted, a
    reason with no node left out."""

    def histogram(counts: dict[str, int]) -> str:
        return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items() if count))

    return (
        f"0/{n} nodes are available: {histogram(reasons)}. "
        f"preemption: 0/{n} nodes are available: {histogram(preemption)}."
    )


SELECTOR = "node(s) didn't match Pod's node affinity/selector"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


def test_a_volume_in_another_zone_keeps_the_pod_pending_and_a_matching_zone_draws_it(
    core_v1: k8s.CoreV1Api, namespace: str, sides: Sides, storage: Storage
) -> None:
    """Nodes in zones z2, z3, z1: a pod whose bound PV is labelled zone z1 lands on the z1
    node; one whose PV is in z9 waits."""
    zones = [{ZONE: "z2"}, {ZONE: "z3"}, {ZONE: "z1"}]
    runs = sides(3, labels=zones)
    for side in runs:
        cls = storage.storage_class(NO_PROVISIONER, mode="Immediate")
        storage.prebound(side.name("z1"), cls, csi(), labels={ZONE: "z1"})
        storage.prebound(side.name("z9"), cls, csi(), labels={ZONE: "z9"})
        create(
            core_v1,
            namespace,
            [side.pod("in-z1", [side.name("z1")]), side.pod("in-z9", [side.name("z9")])],
        )
    outcome = {}
    for side in runs:
        pods = wait_bound(core_v1, namespace, [side.name("in-z1")])
        node = pods[side.name("in-z1")].spec.node_name
        outcome[side.tag] = (
            side.nodes.index(node),
            pending(core_v1, namespace, side.name("in-z9")),
        )
    n = node_count(core_v1)
    assert outcome["ref"] == (
        2,
        (
            "Unschedulable",
            fit_message(
                n,
                {"node(s) had no available volume zone": 3, SELECTOR: n - 3},
                {NOT_HELPFUL: n},
            ),
        ),
    ), outcome
    same_outcome(outcome)


def test_a_read_write_once_pod_claim_in_use_keeps_a_second_pod_pending(
    core_v1: k8s.CoreV1Api, namespace: str, sides: Sides, storage: Storage
) -> None:
    runs = sides(2)
    for side in runs:
        cls = storage.storage_class(NO_PROVISIONER, mode="Immediate")
        storage.prebound(side.name("rwop"), cls, csi(), access_modes=("ReadWriteOncePod",))
        create(core_v1, namespace, [side.pod("first", [side.name("rwop")])])
    for side in runs:
        wait_bound(core_v1, namespace, [side.name("first")])
        create(core_v1, namespace, [side.pod("second", [side.name("rwop")])])
    outcome = {side.tag: pending(core_v1, namespace, side.name("second")) for side in runs}
    n = node_count(core_v1)
    rwop = (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod"
    )
    # VolumeRestrictions counts the claim's users in PreFilter and rejects in Filter, so only
    # the side's own two nodes get its reason; preemption finds the holder not evictable.
    assert outcome["ref"] == (
        "Unschedulable",
        fit_message(n, {rwop: 2, SELECTOR: n - 2}, {NO_VICTIMS: 2, NOT_HELPFUL: n - 2}),
    ), outcome
    same_outcome(outcome)


def test_a_csi_attach_limit_sends_the_pod_to_the_node_with_room_then_keeps_one_pending(
    core_v1: k8s.CoreV1Api, namespace: str, sides: Sides, storage: Storage
) -> None:
    """Two nodes whose CSINode allows one volume of the driver each: `a` (pinned) takes node
    0's, `b` must go to node 1, `c` waits."""

    def csinodes(nodes: list[str]) -> None:
        for node in nodes:
            storage.csinode(node, CSI_DRIVER, 1)

    runs = sides(2, before_nodes=csinodes)
    for side in runs:
        cls = storage.storage_class(NO_PROVISIONER, mode="Immediate")
        for claim in ("a", "b", "c"):
            storage.prebound(side.name(claim), cls, csi())
        create(core_v1, namespace, [side.pod("a", [side.name("a")], on=side.nodes[0])])
    for side in runs:
        wait_bound(core_v1, namespace, [side.name("a")])
        create(core_v1, namespace, [side.pod("b", [side.name("b")])])
    outcome = {}
    for side in runs:
        pods = wait_bound(core_v1, namespace, [side.name("b")])
        create(core_v1, namespace, [side.pod("c", [side.name("c")])])
        outcome[side.tag] = (
            side.nodes.index(pods[side.name("b")].spec.node_name),
            pending(core_v1, namespace, side.name("c")),
        )
    n = node_count(core_v1)
    assert outcome["ref"] == (
        1,
        (
            "Unschedulable",
            fit_message(
                n,
                {"node(s) exceed max volume count": 2, SELECTOR: n - 2},
                {NO_VICTIMS: 2, NOT_HELPFUL: n - 2},
            ),
        ),
    ), outcome
    same_outcome(outcome)
