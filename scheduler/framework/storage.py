"""StaticStorage: a StorageLister over fixed dictionaries. The framework's default when no
storage informers are wired (an empty one), and the storage of unit tests and fake handles."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)


@dataclass
class StaticStorage:
    """Objects by key: claims by namespace/name, the cluster-scoped ones by name. Change them
    through `add` (or call `touch`), so `revision` moves and plugin caches see the change."""

    claims: dict[str, PersistentVolumeClaim] = field(default_factory=dict)
    pvs: dict[str, PersistentVolume] = field(default_factory=dict)
    classes: dict[str, StorageClass] = field(default_factory=dict)
    csi_nodes: dict[str, CSINode] = field(default_factory=dict)
    csi_drivers: dict[str, CSIDriver] = field(default_factory=dict)
    storage_capacities: list[CSIStorageCapacity] = field(default_factory=list)
    attachments: list[VolumeAttachment] = field(default_factory=list)
    _revision: int = 0

    def add(
        self,
        *objects: PersistentVolumeClaim
        | PersistentVolume
        | StorageClass
        | CSINode
        | CSIDriver
        | CSIStorageCapacity
        | VolumeAttachment,
    ) -> StaticStorage:
        """Adds (or replaces) objects of any of the kinds; returns self for chaining."""
        self.touch()
        for obj in objects:
            if isinstance(obj, PersistentVolumeClaim):
                self.claims[obj.key] = obj
            elif isinstance(obj, PersistentVolume):
                self.pvs[obj.name] = obj
            elif isinstance(obj, StorageClass):
                self.classes[obj.name] = obj
            elif isinstance(obj, CSINode):
                self.csi_nodes[obj.name] = obj
            elif isinstance(obj, CSIDriver):
                self.csi_drivers[obj.name] = obj
            elif isinstance(obj, CSIStorageCapacity):
                self.storage_capacities.append(obj)
            else:
                self.attachments.append(obj)
        return self

    def touch(self) -> None:
        self._revision += 1

    def revision(self) -> int:
        return self._revision

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self.claims.get(f"{namespace}/{name}")

    def volume(self, name: str) -> PersistentVolume | None:
        return self.pvs.get(name)

    def volumes(self) -> list[PersistentVolume]:
        return list(self.pvs.values())

    def storage_class(self, name: str) -> StorageClass | None:
        return self.classes.get(name)

    def csi_node(self, name: str) -> CSINode | None:
        return self.csi_nodes.get(name)

    def csi_driver(self, name: str) -> CSIDriver | None:
        return self.csi_drivers.get(name)

    def capacities(self) -> list[CSIStorageCapacity]:
        return list(self.storage_capacities)

    def volume_attachments(self) -> list[VolumeAttachment]:
        return list(self.attachments)
