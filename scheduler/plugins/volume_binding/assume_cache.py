"""An assume cache over the storage informers, as kube-scheduler's passive assume cache: the
PersistentVolumes and claims the scheduler has decided to bind (Reserve) shadow the informer's
objects until the informer holds a different version, so the next pods see a volume as taken
before the API server does, and the API server's answer always wins once it arrives."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from scheduler.framework import PersistentVolume, PersistentVolumeClaim


class _Versioned(Protocol):
    @property
    def resource_version(self) -> str: ...


T = TypeVar("T", bound=_Versioned)


class AssumeError(Exception):
    """An object cannot be assumed: gone from the informer, or the informer moved on."""


class AssumeCache(Generic[T]):
    """Assumed objects by key over a lister. An assumed object is served while the informer
    still holds the version it was derived from; any other informer version expires it (read
    lazily, where upstream's event handler does it)."""

    def __init__(
        self, resource: str, get: Callable[[str], T | None], key: Callable[[T], str]
    ) -> None:
        self._resource = resource
        self._get = get
        self._key = key
        self._lock = threading.Lock()
        self._assumed: dict[str, T] = {}

    def get_api_obj(self, key: str) -> T | None:
        """The informer's object, ignoring assumptions."""
        return self._get(key)

    def get(self, key: str) -> T | None:
        """The assumed object while the informer still has its version, else the informer's."""
        obj = self._get(key)
        with self._lock:
            assumed = self._assumed.get(key)
            if assumed is None:
                return obj
            if obj is not None and assumed.resource_version == obj.resource_version:
                return assumed
            del self._assumed[key]  # the informer has moved on (or the object is gone)
        return obj

    def replace_assumed(self, obj: T) -> T:
        """`obj` (an informer object from a list) or the assumption made from that version."""
        with self._lock:
            assumed = self._assumed.get(self._key(obj))
        if assumed is not None and assumed.resource_version == obj.resource_version:
            return assumed
        return obj

    def assume(self, obj: T) -> None:
        key = self._key(obj)
        stored = self._get(key)
        if stored is None:
            name = key.rsplit("/", 1)[-1]
            raise AssumeError(f'{self._resource} "{name}" not found')
        if stored.resource_version != obj.resource_version:
            raise AssumeError(
                f'"{key}" is out of sync (stored: {stored.resource_version}, '
                f"assume: {obj.resource_version})"
            )
        with self._lock:
            self._assumed[key] = obj

    def restore(self, obj: T) -> None:
        """Drops the assumption made as `obj` (one of another version stays)."""
        key = self._key(obj)
        with self._lock:
            assumed = self._assumed.get(key)
            if assumed is not None and assumed.resource_version == obj.resource_version:
                del self._assumed[key]

    def assumed_count(self) -> int:
        with self._lock:
            return len(self._assumed)


def pv_key(pv: PersistentVolume) -> str:
    return pv.name


def pvc_key(claim: PersistentVolumeClaim) -> str:
    return claim.key
