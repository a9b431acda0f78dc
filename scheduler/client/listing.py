"""Read-only, paged lists of every kind scheduling reads: what `kube-pysched snapshot` dumps.

Each collection is listed in pages (`limit` / `continue`), as client-go's pager does, so a
5000-node cluster's pods never come back as one response the API server has to build whole. A
collection the API server does not serve (404: a CRD not installed, an API group not enabled)
is reported as skipped, not an error; a 403 is an error (the dump would silently miss what
scheduling reads).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from scheduler.api.errors import ApiError
from scheduler.api.json_types import Json
from scheduler.client.rest import RestClient

#: Objects per page: client-go's pager default.
PAGE_SIZE = 500


@dataclass(frozen=True, slots=True)
class ListedKind:
    """One collection: the kind and apiVersion its items carry, and its cluster-wide path."""

    kind: str
    api_version: str
    path: str


def _core(kind: str, plural: str) -> ListedKind:
    return ListedKind(kind, "v1", f"/api/v1/{plural}")


def _group(kind: str, group_version: str, plural: str) -> ListedKind:
    return ListedKind(kind, group_version, f"/apis/{group_version}/{plural}")


#: Everything kube-pysched's informers and plugins read, in the order a loader wants them
#: (what pods refer to before the pods).
SNAPSHOT_KINDS: tuple[ListedKind, ...] = (
    _core("Namespace", "namespaces"),
    _group("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses"),
    _core("Node", "nodes"),
    _group("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets"),
    _core("Service", "services"),
    _core("ReplicationController", "replicationcontrollers"),
    _group("ReplicaSet", "apps/v1", "replicasets"),
    _group("StatefulSet", "apps/v1", "statefulsets"),
    _core("PersistentVolume", "persistentvolumes"),
    _core("PersistentVolumeClaim", "persistentvolumeclaims"),
    _group("StorageClass", "storage.k8s.io/v1", "storageclasses"),
    _group("CSINode", "storage.k8s.io/v1", "csinodes"),
    _group("CSIDriver", "storage.k8s.io/v1", "csidrivers"),
    _group("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities"),
    _group("PodGroup", "scheduling.x-k8s.io/v1alpha1", "podgroups"),
    _group("PodGroup", "scheduling.k8s.io/v1beta1", "podgroups"),
    _group("DeviceClass", "resource.k8s.io/v1", "deviceclasses"),
    _group("ResourceClaim", "resource.k8s.io/v1", "resourceclaims"),
    _group("ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates"),
    _group("ResourceSlice", "resource.k8s.io/v1", "resourceslices"),
    _group("DeviceTaintRule", "resource.k8s.io/v1", "devicetaintrules"),
    _core("Pod", "pods"),
)


class NotServed(Exception):
    """The API server does not serve this collection (404)."""


def list_pages(
    rest: RestClient, listed: ListedKind, *, page_size: int = PAGE_SIZE
) -> Iterator[list[Json]]:
    """The collection's items page by page, each item with its `kind` and `apiVersion` set
    (a list's items carry neither). Raises NotServed on 404, ApiError on anything else."""
    token = ""
    while True:
        query: dict[str, str | int | bool] = {"limit": page_size}
        if token:
            query["continue"] = token
        try:
            page: Json = rest.get(listed.path, query)
        except ApiError as err:
            if err.not_found:
                raise NotServed(f"{listed.api_version} {listed.kind}") from err
            raise
        items = page.get("items") or []
        for item in items:
            item["kind"] = listed.kind
            item["apiVersion"] = listed.api_version
        yield items
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return


def list_all(
    rest: RestClient,
    kinds: tuple[ListedKind, ...] = SNAPSHOT_KINDS,
    *,
    page_size: int = PAGE_SIZE,
    on_page: Callable[[ListedKind, int], None] | None = None,
    on_skipped: Callable[[ListedKind], None] | None = None,
) -> list[Json]:
    """Every item of `kinds`, in their order. `on_page(kind, listed so far)` after each page;
    `on_skipped(kind)` for a collection not served."""
    objects: list[Json] = []
    for listed in kinds:
        count = 0
        try:
            for items in list_pages(rest, listed, page_size=page_size):
                objects.extend(items)
                count += len(items)
                if on_page is not None:
                    on_page(listed, count)
        except NotServed:
            if on_skipped is not None:
                on_skipped(listed)
    return objects
