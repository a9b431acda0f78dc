"""Parsing of the storage objects the volume plugins read (scheduler/api/storage.py)."""

from __future__ import annotations

import pytest

from scheduler.api.parse import parse_pod
from scheduler.api.storage import (
    BINDING_IMMEDIATE,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    ObjectRef,
    StorageParseError,
    ephemeral_claim_error,
    has_claims,
    parse_claim,
    parse_csi_driver,
    parse_csi_node,
    parse_storage_capacity,
    parse_storage_class,
    parse_volume,
    parse_volume_attachment,
    pod_claims,
)

GIB = 1024**3


def test_claim_fields_and_defaults() -> None:
    claim = parse_claim(
        {
            "metadata": {
                "namespace": "db",
                "name": "data",
                "uid": "c1",
                "resourceVersion": "7",
                "annotations": {"volume.kubernetes.io/selected-node": "n1"},
                "ownerReferences": [{"uid": "p1", "controller": True}, {"uid": "x"}],
            },
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "2Gi"}},
                "storageClassName": "local",
                "selector": {"matchLabels": {"disk": "ssd"}},
            },
            "status": {"phase": "Pending"},
        }
    )
    assert (claim.key, claim.uid, claim.resource_version) == ("db/data", "c1", "7")
    assert (claim.storage_class, claim.class_set, claim.request) == ("local", True, 2 * GIB)
    assert claim.access_modes == ("ReadWriteOnce",)
    assert claim.selector is not None and claim.selector.matches({"disk": "ssd"})
    assert (claim.volume_mode, claim.phase, claim.controller_uid) == ("Filesystem", "Pending", "p1")
    assert claim.annotations["volume.kubernetes.io/selected-node"] == "n1"
    assert not claim.deleting

    bare = parse_claim({"metadata": {"namespace": "db", "name": "x", "deletionTimestamp": "t"}})
    assert (bare.storage_class, bare.class_set, bare.request, bare.selector) == ("", False, 0, None)
    assert bare.deleting


def test_beta_class_annotation_wins_over_the_field() -> None:
    claim = parse_claim(
        {
            "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "spec": {"storageClassName": "new"},
        }
    )
    assert (claim.storage_class, claim.class_set) == ("old", True)


def test_volume_fields() -> None:
    pv = parse_volume(
        {
            "metadata": {"name": "pv1", "labels": {"topology.kubernetes.io/zone": "a"}},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
                "claimRef": {"namespace": "db", "name": "data", "uid": "c1"},
                "local": {"path": "/mnt/disk"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": ["n1"],
                                    }
                                ]
                            }
                        ]
                    }
                },
            },
            "status": {"phase": "Bound"},
        }
    )
    assert (pv.capacity, pv.storage_class, pv.phase) == (10 * GIB, "local", "Bound")
    assert pv.claim_ref == ObjectRef("db", "data", "c1")
    assert (pv.source, pv.source_spec) == ("local", {"path": "/mnt/disk"})
    assert pv.node_affinity is not None
    assert pv.node_affinity.matches("n1", {"kubernetes.io/hostname": "n1"})
    assert not pv.node_affinity.matches("n2", {"kubernetes.io/hostname": "n2"})

    csi = parse_volume(
        {"metadata": {"name": "pv2"}, "spec": {"csi": {"driver": "d", "volumeHandle": "h"}}}
    )
    assert (csi.source, csi.source_spec["driver"], csi.claim_ref, csi.node_affinity) == (
        "csi",
        "d",
        None,
        None,
    )


def test_bad_quantity_is_an_error_naming_the_field() -> None:
    with pytest.raises(StorageParseError, match=r"spec\.capacity\.storage"):
        parse_volume({"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "lots"}}})


def test_storage_class() -> None:
    wffc = parse_storage_class(
        {
            "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [
                {"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}
            ],
        }
    )
    assert wffc.binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER
    assert wffc.allowed_topologies[0][0].values == frozenset({"a", "b"})
    assert parse_storage_class({"metadata": {"name": "x"}}).binding_mode == BINDING_IMMEDIATE


def test_csi_objects() -> None:
    node = parse_csi_node(
        {
            "metadata": {
                "name": "n1",
                "annotations": {
                    "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd, x"
                },
            },
            "spec": {"drivers": [{"name": "d", "nodeID": "n1", "allocatable": {"count": 2}}]},
        }
    )
    driver = node.driver("d")
    assert driver is not None and driver.allocatable_count == 2
    assert node.driver("other") is None
    assert node.migrated_plugins == frozenset({"kubernetes.io/gce-pd", "x"})

    assert parse_csi_driver({"metadata": {"name": "d"}, "spec": {}}).attach_required
    assert parse_csi_driver(
        {"metadata": {"name": "d"}, "spec": {"storageCapacity": True}}
    ).storage_capacity

    cap = parse_storage_capacity(
        {
            "metadata": {"namespace": "kube-system", "name": "c"},
            "storageClassName": "fast",
            "nodeTopology": {"matchLabels": {"zone": "a"}},
            "capacity": "1Gi",
        }
    )
    assert (cap.storage_class, cap.capacity, cap.maximum_volume_size) == ("fast", GIB, None)
    assert cap.node_topology is not None and cap.node_topology.matches({"zone": "a"})

    va = parse_volume_attachment(
        {
            "metadata": {"name": "va"},
            "spec": {"attacher": "d", "nodeName": "n1", "source": {"persistentVolumeName": "pv"}},
        }
    )
    assert (va.attacher, va.node_name, va.volume_name) == ("d", "n1", "pv")


def test_pod_claims_include_generic_ephemeral_volumes() -> None:
    pod = parse_pod(
        {
            "metadata": {"namespace": "db", "name": "web-0", "uid": "p1"},
            "spec": {
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "tmp", "emptyDir": {}},
                    {"name": "disk", "gcePersistentDisk": {"pdName": "pd1", "readOnly": True}},
                ]
            },
        }
    )
    claims = list(pod_claims(pod))
    assert [(c.name, c.ephemeral) for c in claims] == [
        ("data-web-0", False),
        ("web-0-scratch", True),
    ]
    assert has_claims(pod)
    assert pod.volumes[3].spec == {"pdName": "pd1", "readOnly": True}

    owned = parse_claim(
        {
            "metadata": {
                "namespace": "db",
                "name": "web-0-scratch",
                "ownerReferences": [{"uid": "p1", "controller": True}],
            }
        }
    )
    stranger = parse_claim({"metadata": {"namespace": "db", "name": "web-0-scratch"}})
    assert ephemeral_claim_error(pod, owned) == ""
    assert ephemeral_claim_error(pod, stranger) == (
        "PVC db/web-0-scratch was not created for pod db/web-0 (pod is not owner)"
    )
