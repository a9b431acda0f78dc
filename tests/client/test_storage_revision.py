"""The storage revision NodeVolumeLimits caches under: which claim changes move it."""

from __future__ import annotations

from typing import Any, cast

import pytest

from scheduler.client.rest import RestClient
from scheduler.client.storage import StorageInformers

CLAIMS = "PersistentVolumeClaim"


def claim(rv: str, **spec: Any) -> dict[str, Any]:
    status = spec.pop("status", {"phase": "Bound"})
    owners = spec.pop("owners", [])
    return {
        "metadata": {
            "namespace": "ns",
            "name": "c",
            "uid": "u1",
            "resourceVersion": rv,
            "ownerReferences": owners,
        },
        "spec": {"volumeName": "pv-1", "storageClassName": "fast", **spec},
        "status": status,
    }


@pytest.fixture
def storage() -> StorageInformers:
    # The informers are never started: events are applied to their stores directly.
    informers = StorageInformers(cast(RestClient, None))
    informers.informers[CLAIMS].store.apply("ADDED", claim("1"))
    return informers


def test_a_claims_status_rewrite_keeps_the_revision(storage: StorageInformers) -> None:
    before = storage.revision()
    storage.informers[CLAIMS].store.apply(
        "MODIFIED", claim("2", status={"phase": "Bound", "conditions": [{"type": "Resizing"}]})
    )
    stored = storage.claim("ns", "c")
    assert stored is not None and stored.resource_version == "2"
    assert storage.revision() == before


@pytest.mark.parametrize(
    "changed",
    [
        {"volumeName": "pv-2"},
        {"volumeName": None},
        {"storageClassName": "slow"},
        {"owners": [{"uid": "pod-uid", "controller": True, "kind": "Pod", "name": "p"}]},
    ],
    ids=["volume", "unbound", "class", "owner"],
)
def test_a_claims_volume_class_or_owner_moves_the_revision(
    storage: StorageInformers, changed: dict[str, Any]
) -> None:
    before = storage.revision()
    storage.informers[CLAIMS].store.apply("MODIFIED", claim("2", **changed))
    assert storage.revision() > before


def test_adding_or_deleting_a_claim_or_changing_a_volume_moves_it(
    storage: StorageInformers,
) -> None:
    before = storage.revision()
    storage.informers[CLAIMS].store.apply("DELETED", claim("2"))
    deleted = storage.revision()
    assert deleted > before
    storage.informers[CLAIMS].store.apply("ADDED", claim("3"))
    assert storage.revision() > deleted
    added = storage.revision()
    volume = {"metadata": {"name": "pv-1", "resourceVersion": "4"}, "spec": {}}
    storage.informers["PersistentVolume"].store.apply("ADDED", volume)
    assert storage.revision() > added
