"""Informers: a reflector on its own thread, a store of parsed objects, and event handlers.

Every object from the API passes through `transform` (e.g. scheduler.api.parse.parse_pod) once;
the store keeps only the results, so handlers and readers never see raw JSON. A transform may
return None to ignore an object cheaply: an object that becomes relevant is delivered as an add,
one that stops being relevant as a delete. A transform that raises is logged with the object's
key and the object skipped, as is a handler that raises; neither stops the stream.

Handlers run synchronously on the informer's thread, in event order, after the store has been
updated (so `get` inside a handler sees the new object). A watch event whose resourceVersion
equals the stored one is a duplicate and is dropped; a relist delivers only what changed.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

import structlog

from scheduler.api.json_types import Json
from scheduler.api.namespace import Namespace, parse_namespace
from scheduler.api.objects import Node, Pod, PodDisruptionBudget
from scheduler.api.parse import parse_node, parse_pdb, parse_pod, parse_service, parse_workload
from scheduler.api.spread import Service, Workload
from scheduler.client.backoff import Backoff
from scheduler.client.reflector import (
    DEFAULT_PAGE_SIZE,
    MIN_WATCH_TIMEOUT,
    ListWatchSpec,
    Reflector,
)
from scheduler.client.rest import RestClient
from scheduler.client.watch import DELETED

log = structlog.get_logger(__name__)

T = TypeVar("T")

Transform = Callable[[Json], "T | None"]
AddHandler = Callable[[T], None]
UpdateHandler = Callable[[T, T], None]
DeleteHandler = Callable[[T], None]

# kube-scheduler's pod informer skips terminated pods server-side.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
PODS = ListWatchSpec("/api/v1/pods", field_selector=POD_FIELD_SELECTOR)
NODES = ListWatchSpec("/api/v1/nodes")
PDBS = ListWatchSpec("/apis/policy/v1/poddisruptionbudgets")
NAMESPACES = ListWatchSpec("/api/v1/namespaces")
SERVICES = ListWatchSpec("/api/v1/services")
# The workload kinds whose selectors default a pod's topology spreading, by kind.
WORKLOADS = {
    "ReplicationController": ListWatchSpec("/api/v1/replicationcontrollers"),
    "ReplicaSet": ListWatchSpec("/apis/apps/v1/replicasets"),
    "StatefulSet": ListWatchSpec("/apis/apps/v1/statefulsets"),
}


def object_key(obj: Json) -> str:
    """namespace/name, or name for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


class InformerStore(Generic[T]):
    """Parsed objects by key, turning list results and watch events into handler calls.

    Mutated only by the reflector's thread. Readers on other threads use `get`/`list`/`keys`,
    which are single dict operations and hence atomic under CPython's GIL.
    """

    def __init__(self, transform: Transform[T], name: str = "") -> None:
        self._transform = transform
        self.name = name
        self._objects: dict[str, T] = {}
        self._versions: dict[str, str] = {}
        self._on_add: list[AddHandler[T]] = []
        self._on_update: list[UpdateHandler[T]] = []
        self._on_delete: list[DeleteHandler[T]] = []
        self.synced = threading.Event()
        self.transform_errors = 0
        self.handler_errors = 0
        #: Why an object present in the API could not be used, by key (until it changes into
        #: one that can, or goes): what readers tell users instead of "not found".
        self._rejected: dict[str, str] = {}

    # --- handlers ---------------------------------------------------------------------------

    def add_handlers(
        self,
        on_add: AddHandler[T] | None = None,
        on_update: UpdateHandler[T] | None = None,
        on_delete: DeleteHandler[T] | None = None,
    ) -> None:
        if on_add is not None:
            self._on_add.append(on_add)
        if on_update is not None:
            self._on_update.append(on_update)
        if on_delete is not None:
            self._on_delete.append(on_delete)

    def _added(self, key: str, obj: T) -> None:
        for handler in self._on_add:
            try:
                handler(obj)
            except Exception:
                self.handler_errors += 1
                log.exception("add handler failed", informer=self.name, key=key)

    def _updated(self, key: str, old: T, new: T) -> None:
        for handler in self._on_update:
            try:
                handler(old, new)
            except Exception:
                self.handler_errors += 1
                log.exception("update handler failed", informer=self.name, key=key)

    def _deleted(self, key: str, obj: T) -> None:
        for handler in self._on_delete:
            try:
                handler(obj)
            except Exception:
                self.handler_errors += 1
                log.exception("delete handler failed", informer=self.name, key=key)

    # --- reads ------------------------------------------------------------------------------

    def get(self, key: str) -> T | None:
        return self._objects.get(key)

    def list(self) -> list[T]:
        return list(self._objects.values())

    def keys(self) -> builtins.list[str]:
        return list(self._objects)

    def __len__(self) -> int:
        return len(self._objects)

    def rejected(self, key: str) -> str:
        """Why the object `key` could not be used ("" when it could, or does not exist)."""
        return self._rejected.get(key, "")

    # --- ReflectorStore ---------------------------------------------------------------------

    def _parse(self, key: str, raw: Json) -> tuple[bool, T | None]:
        """(ok, transformed); ok is False when the transform raised."""
        try:
            obj = self._transform(raw)
        except Exception as err:
            self.transform_errors += 1
            self._rejected[key] = str(err)
            log.error("cannot use object, skipping it", informer=self.name, key=key, error=str(err))
            return False, None
        self._rejected.pop(key, None)
        return True, obj

    def _upsert(self, key: str, rv: str, raw: Json) -> None:
        ok, obj = self._parse(key, raw)
        if not ok:
            return
        old = self._objects.get(key)
        if obj is None:
            if old is not None:
                del self._objects[key]
                self._versions.pop(key, None)
                self._deleted(key, old)
            return
        self._objects[key] = obj
        self._versions[key] = rv
        if old is None:
            self._added(key, obj)
        else:
            self._updated(key, old, obj)

    def apply(self, event_type: str, obj: Json) -> None:
        key = object_key(obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion") or ""
        if event_type == DELETED:
            old = self._objects.pop(key, None)
            if old is not None:
                self._versions.pop(key, None)
                ok, final = self._parse(key, obj)
                self._deleted(key, final if ok and final is not None else old)
            self._rejected.pop(key, None)
            return
        if rv and self._versions.get(key) == rv:
            return
        self._upsert(key, rv, obj)

    def replace(self, items: Iterable[Json], resource_version: str) -> None:
        """The listed state; `items` may be a generator (deletions only after the last item)."""
        seen: set[str] = set()
        versions = self._versions
        for raw in items:
            key = object_key(raw)
            seen.add(key)
            rv = (raw.get("metadata") or {}).get("resourceVersion") or ""
            if rv and versions.get(key) == rv:
                continue
            self._upsert(key, rv, raw)
        for key in [k for k in self._rejected if k not in seen]:
            del self._rejected[key]
        gone = [k for k in self._objects if k not in seen]
        for key in gone:
            old = self._objects.pop(key)
            versions.pop(key, None)
            self._deleted(key, old)
        self.synced.set()


class Namespaced(Protocol):
    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Namespaced)


class NamespaceIndex(Generic[N]):
    """An informer's objects by namespace, kept by its handlers: one namespace's objects
    without going through every object of the cluster (as client-go's namespace index)."""

    def __init__(self, informer: Informer[N]) -> None:
        self._lock = threading.Lock()
        self._by_namespace: dict[str, dict[str, N]] = {}
        informer.add_event_handler(self._put, lambda _old, new: self._put(new), self._drop)

    def _put(self, obj: N) -> None:
        with self._lock:
            self._by_namespace.setdefault(obj.namespace, {})[obj.name] = obj

    def _drop(self, obj: N) -> None:
        with self._lock:
            objects = self._by_namespace.get(obj.namespace)
            if objects is not None:
                objects.pop(obj.name, None)
                if not objects:
                    del self._by_namespace[obj.namespace]

    def list(self, namespace: str) -> list[N]:
        with self._lock:
            objects = self._by_namespace.get(namespace)
            return list(objects.values()) if objects else []


class Informer(Generic[T]):
    """A reflector thread keeping an `InformerStore` current."""

    def __init__(
        self,
        rest: RestClient,
        spec: ListWatchSpec,
        transform: Transform[T],
        *,
        name: str = "",
        page_size: int = DEFAULT_PAGE_SIZE,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        backoff: Backoff | None = None,
    ) -> None:
        self.name = name or spec.path
        self.store: InformerStore[T] = InformerStore(transform, self.name)
        self.reflector = Reflector(
            rest,
            spec,
            self.store,
            name=self.name,
            page_size=page_size,
            min_watch_timeout=min_watch_timeout,
            backoff=backoff,
        )
        self._thread: threading.Thread | None = None

    def add_event_handler(
        self,
        on_add: AddHandler[T] | None = None,
        on_update: UpdateHandler[T] | None = None,
        on_delete: DeleteHandler[T] | None = None,
    ) -> None:
        """Registers handlers; only before `start()`, so none misses the initial list."""
        if self._thread is not None:
            raise RuntimeError(f"informer {self.name} already started")
        self.store.add_handlers(on_add, on_update, on_delete)

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self.reflector.run, name=f"informer {self.name}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stops the reflector and waits (up to `timeout`) for its thread to end."""
        self.reflector.stop()
        if self._thread is not None:
            self._thread.join(timeout)

    def has_synced(self) -> bool:
        """True once the initial list has been delivered to the handlers."""
        return self.store.synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.store.synced.wait(timeout)

    def get(self, key: str) -> T | None:
        return self.store.get(key)

    def list(self) -> list[T]:
        return self.store.list()


def pod_informer(
    rest: RestClient, transform: Transform[Pod] = parse_pod, **kwargs: Any
) -> Informer[Pod]:
    """Non-terminated pods, as kube-scheduler watches them."""
    return Informer(rest, PODS, transform, name="pods", **kwargs)


def node_informer(
    rest: RestClient, transform: Transform[Node] = parse_node, **kwargs: Any
) -> Informer[Node]:
    return Informer(rest, NODES, transform, name="nodes", **kwargs)


def pdb_informer(
    rest: RestClient,
    transform: Transform[PodDisruptionBudget] = parse_pdb,
    **kwargs: Any,
) -> Informer[PodDisruptionBudget]:
    return Informer(rest, PDBS, transform, name="poddisruptionbudgets", **kwargs)


def namespace_informer(
    rest: RestClient, transform: Transform[Namespace] = parse_namespace, **kwargs: Any
) -> Informer[Namespace]:
    """Namespaces as name + labels: InterPodAffinity resolves namespaceSelectors against them."""
    return Informer(rest, NAMESPACES, transform, name="namespaces", **kwargs)


def service_informer(rest: RestClient, **kwargs: Any) -> Informer[Service]:
    """Services reduced to their selectors (PodTopologySpread's default constraints)."""
    return Informer(rest, SERVICES, parse_service, name="services", **kwargs)


def workload_informer(rest: RestClient, kind: str, **kwargs: Any) -> Informer[Workload]:
    """ReplicationControllers, ReplicaSets or StatefulSets reduced to their selectors."""

    def transform(obj: Json) -> Workload:
        return parse_workload(kind, obj)

    return Informer(rest, WORKLOADS[kind], transform, name=f"{kind.lower()}s", **kwargs)
