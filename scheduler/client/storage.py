"""StorageInformers: one informer per storage kind the volume plugins read, as a
framework.interface.StorageLister. They are built only when a plugin asks for storage (as a
lister does in kube-scheduler's informer factory), so a profile without volume plugins never
lists or watches them."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

from scheduler.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    parse_claim,
    parse_csi_driver,
    parse_csi_node,
    parse_storage_capacity,
    parse_storage_class,
    parse_volume,
    parse_volume_attachment,
)
from scheduler.client.informer import Informer
from scheduler.client.reflector import ListWatchSpec
from scheduler.client.rest import RestClient

#: Each storage kind: its event resource name (framework.events.EventResource values), path
#: and parser.
STORAGE_KINDS: Mapping[str, tuple[str, Callable[[Any], Any]]] = {
    "PersistentVolumeClaim": ("/api/v1/persistentvolumeclaims", parse_claim),
    "PersistentVolume": ("/api/v1/persistentvolumes", parse_volume),
    "storage.k8s.io/StorageClass": ("/apis/storage.k8s.io/v1/storageclasses", parse_storage_class),
    "storage.k8s.io/CSINode": ("/apis/storage.k8s.io/v1/csinodes", parse_csi_node),
    "storage.k8s.io/CSIDriver": ("/apis/storage.k8s.io/v1/csidrivers", parse_csi_driver),
    "storage.k8s.io/CSIStorageCapacity": (
        "/apis/storage.k8s.io/v1/csistoragecapacities",
        parse_storage_capacity,
    ),
    "storage.k8s.io/VolumeAttachment": (
        "/apis/storage.k8s.io/v1/volumeattachments",
        parse_volume_attachment,
    ),
}


class StorageInformers:
    """The seven storage informers, by event resource name (`informers`)."""

    def __init__(self, rest: RestClient, **kwargs: Any) -> None:
        self.informers: dict[str, Informer[Any]] = {
            resource: Informer(
                rest,
                ListWatchSpec(path),
                parse,
                name=path.rsplit("/", 1)[-1],
                **kwargs,
            )
            for resource, (path, parse) in STORAGE_KINDS.items()
        }
        inf = self.informers
        self._claims: Informer[PersistentVolumeClaim] = inf["PersistentVolumeClaim"]
        self._volumes: Informer[PersistentVolume] = inf["PersistentVolume"]
        self._classes: Informer[StorageClass] = inf["storage.k8s.io/StorageClass"]
        self._csi_nodes: Informer[CSINode] = inf["storage.k8s.io/CSINode"]
        self._csi_drivers: Informer[CSIDriver] = inf["storage.k8s.io/CSIDriver"]
        self._capacities: Informer[CSIStorageCapacity] = inf["storage.k8s.io/CSIStorageCapacity"]
        self._attachments: Informer[VolumeAttachment] = inf["storage.k8s.io/VolumeAttachment"]
        # next() of a count is atomic: every change moves the revision, even when two
        # informer threads change objects at once.
        self._changes = itertools.count(1)
        self._revision = 0
        self._claims.add_event_handler(self._changed, self._claim_updated, self._changed)
        for informer in (self._volumes, self._classes, self._csi_nodes):
            informer.add_event_handler(self._changed, self._changed, self._changed)

    def _changed(self, *_objects: Any) -> None:
        """Any add, update (old, new) or delete of a claim, volume, class or CSINode."""
        self._revision = next(self._changes)

    def _claim_updated(self, old: PersistentVolumeClaim, new: PersistentVolumeClaim) -> None:
        """A claim's update moves the revision only if it can change which volume a pod using
        it attaches: its PV, its class or its owner. The PV controller rewrites bound claims'
        status over and over (1 200-1 500 status writes in a 20 s window of SchedulingCSIPVs at
        1000 nodes); each of those used to drop every node's cached count of attached volumes
        (docs/benchmarks.md, "Results")."""
        if (old.volume_name, old.storage_class, old.controller_uid) != (
            new.volume_name,
            new.storage_class,
            new.controller_uid,
        ):
            self._changed()

    def revision(self) -> int:
        """Moves whenever a claim's binding, class or owner, or a PV, class or CSINode changes:
        what the count of a node's attachable volumes reads."""
        return self._revision

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self._claims.get(f"{namespace}/{name}")

    def volume(self, name: str) -> PersistentVolume | None:
        return self._volumes.get(name)

    def volumes(self) -> list[PersistentVolume]:
        return self._volumes.list()

    def storage_class(self, name: str) -> StorageClass | None:
        return self._classes.get(name)

    def csi_node(self, name: str) -> CSINode | None:
        return self._csi_nodes.get(name)

    def csi_driver(self, name: str) -> CSIDriver | None:
        return self._csi_drivers.get(name)

    def capacities(self) -> list[CSIStorageCapacity]:
        return self._capacities.list()

    def volume_attachments(self) -> list[VolumeAttachment]:
        return self._attachments.list()
