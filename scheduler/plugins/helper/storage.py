"""Storage helpers shared by the volume plugins: the messages of a lister's NotFound error, and
the in-tree to CSI volume translation of k8s.io/csi-translation-lib (v0.37) reduced to what
the scheduler reads of it, the CSI driver and volume handle a migrated volume gets."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import PersistentVolume, PodVolume

# --- NotFound errors, as client-go listers word them (apierrors.NewNotFound) ---------------


def claim_not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def volume_not_found(name: str) -> str:
    return f'persistentvolume "{name}" not found'


def storage_class_not_found(name: str) -> str:
    return f'storageclass.storage.k8s.io "{name}" not found'


# --- in-tree to CSI translation ------------------------------------------------------------


class TranslationError(ValueError):
    """An in-tree volume csi-translation-lib cannot translate (its error text)."""


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    """A migratable in-tree volume plugin: the VolumeSource key it handles, its plugin name
    (StorageClass provisioner) and the CSI driver it migrated to."""

    source: str
    name: str
    driver: str


GCE_PD = InTreePlugin("gcePersistentDisk", "kubernetes.io/gce-pd", "pd.csi.storage.gke.io")
AWS_EBS = InTreePlugin("awsElasticBlockStore", "kubernetes.io/aws-ebs", "ebs.csi.aws.com")
CINDER = InTreePlugin("cinder", "kubernetes.io/cinder", "cinder.csi.openstack.org")
AZURE_DISK = InTreePlugin("azureDisk", "kubernetes.io/azure-disk", "disk.csi.azure.com")
AZURE_FILE = InTreePlugin("azureFile", "kubernetes.io/azure-file", "file.csi.azure.com")
VSPHERE = InTreePlugin("vsphereVolume", "kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com")
PORTWORX = InTreePlugin("portworxVolume", "kubernetes.io/portworx-volume", "pxd.portworx.com")

IN_TREE_PLUGINS: tuple[InTreePlugin, ...] = (
    GCE_PD,
    AWS_EBS,
    CINDER,
    AZURE_DISK,
    AZURE_FILE,
    VSPHERE,
    PORTWORX,
)
_BY_SOURCE: Mapping[str, InTreePlugin] = {p.source: p for p in IN_TREE_PLUGINS}
_BY_NAME: Mapping[str, InTreePlugin] = {p.name: p for p in IN_TREE_PLUGINS}


def plugin_for_source(source: str) -> InTreePlugin | None:
    """The plugin of a PV's or an inline volume's source (CanSupport/CanSupportInline): the
    same keys serve both, PersistentVolumeSource and VolumeSource name them alike."""
    return _BY_SOURCE.get(source)


def plugin_by_name(name: str) -> InTreePlugin | None:
    """IsMigratableIntreePluginByName / GetCSINameFromInTreeName."""
    return _BY_NAME.get(name)


#: Plugins whose CSI migration NodeVolumeLimits treats as off (isCSIMigrationOn), so their
#: volume handles are never read: only their driver name is given.
_UNCOUNTED = (AZURE_FILE, VSPHERE)
#: Plugins whose CSI migration NodeVolumeLimits treats as on (nodevolumelimits/utils.go).
MIGRATION_ON: frozenset[str] = frozenset(p.name for p in IN_TREE_PLUGINS if p not in _UNCOUNTED)

_GCE_UNSPECIFIED = "UNSPECIFIED"
_ZONE_DELIMITER = "__"
_AWS_VOLUME = re.compile(r"^vol-[^/]*$")


def _gce_zonal(zone: str, pd_name: str) -> str:
    return f"projects/{_GCE_UNSPECIFIED}/zones/{zone}/disks/{pd_name}"


def _gce_region(zones: list[str]) -> str:
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(
                "failed to get region from zones: zone in unexpected format, expected: "
                f"{{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(
            f"failed to get region from zones: multiple or no regions gotten from zones, got: "
            f"{sorted(regions)}"
        )
    return regions.pop()


def _aws_volume_id(kubernetes_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: `aws://<zone>/<vol-id>` or a bare volume id."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    rest = kubernetes_id[len("aws://") :]
    slash = rest.find("/")
    aws_id = rest[slash:].strip("/") if slash >= 0 else ""
    if not _AWS_VOLUME.match(aws_id):
        raise TranslationError(
            "failed to translate Kubernetes ID to EBS Volume ID "
            f"Invalid format for AWS volume ({kubernetes_id})"
        )
    return aws_id


def _azure_disk_kind(spec: Mapping[str, Any]) -> None:
    kind = spec.get("kind")
    if kind is not None and str(kind).lower() != "managed":
        raise TranslationError(f"kind({kind}) is not supported in csi migration")


def _inline_handle(plugin: InTreePlugin, volume: PodVolume) -> str:
    spec = volume.spec
    if plugin is GCE_PD:
        return _gce_zonal(_GCE_UNSPECIFIED, str(spec.get("pdName", "")))
    if plugin is AWS_EBS:
        return _aws_volume_id(str(spec.get("volumeID", "")))
    if plugin is AZURE_DISK:
        _azure_disk_kind(spec)
        return str(spec.get("diskURI", ""))
    if plugin in _UNCOUNTED:
        return ""
    return str(spec.get("volumeID", ""))  # cinder, portworx


def translate_inline(volume: PodVolume) -> tuple[str, str]:
    """TranslateInTreeInlineVolumeToCSI: (CSI driver, volume handle) of a migratable inline
    volume; TranslationError when the lib fails (an unmanaged Azure disk, a bad EBS id)."""
    plugin = _BY_SOURCE.get(volume.source)
    if plugin is None:
        raise TranslationError(f"could not find in-tree plugin translation logic for {volume.name}")
    return plugin.driver, _inline_handle(plugin, volume)


def translate_volume(pv: PersistentVolume) -> tuple[str, str]:
    """TranslateInTreePVToCSI: (CSI driver, volume handle) of a migratable in-tree PV."""
    plugin = _BY_SOURCE.get(pv.source)
    if plugin is None:
        raise TranslationError(f"could not find in-tree plugin translation logic for {pv.name}")
    spec = pv.source_spec
    if plugin is GCE_PD:
        zones_label = pv.labels.get("failure-domain.beta.kubernetes.io/zone", "") or pv.labels.get(
            "topology.kubernetes.io/zone", ""
        )
        zones = zones_label.split(_ZONE_DELIMITER)
        pd = str(spec.get("pdName", ""))
        if len(zones) == 1 and zones[0]:
            return plugin.driver, _gce_zonal(zones[0], pd)
        if len(zones) > 1:
            region = _gce_region(zones)
            return plugin.driver, f"projects/{_GCE_UNSPECIFIED}/regions/{region}/disks/{pd}"
        return plugin.driver, _gce_zonal(_GCE_UNSPECIFIED, pd)
    if plugin is AWS_EBS:
        return plugin.driver, _aws_volume_id(str(spec.get("volumeID", "")))
    if plugin is AZURE_DISK:
        _azure_disk_kind(spec)
        return plugin.driver, str(spec.get("diskURI", ""))
    if plugin in _UNCOUNTED:
        return plugin.driver, ""
    return plugin.driver, str(spec.get("volumeID", ""))  # cinder, portworx
