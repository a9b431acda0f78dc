"""NamespaceIndex follows an informer's adds, updates, deletes and relists per namespace."""

from __future__ import annotations

from typing import Any

from scheduler.client.config import ClientConfig
from scheduler.client.informer import NamespaceIndex, service_informer
from scheduler.client.rest import RestClient


def service(namespace: str, name: str, rv: str, selector: dict[str, str]) -> dict[str, Any]:
    meta = {"namespace": namespace, "name": name, "resourceVersion": rv, "uid": name}
    return {"kind": "Service", "metadata": meta, "spec": {"selector": selector}}


def names(index: NamespaceIndex[Any], namespace: str) -> dict[str, Any]:
    return {s.name: s.selector for s in index.list(namespace)}


def test_a_namespaces_objects_follow_every_change() -> None:
    informer = service_informer(RestClient(ClientConfig(server="http://127.0.0.1:1")))
    index = NamespaceIndex(informer)
    store = informer.store
    store.replace([service("a", "web", "1", {"app": "web"}), service("b", "db", "2", {})], "2")
    assert names(index, "a") == {"web": {"app": "web"}}
    store.apply("MODIFIED", service("a", "web", "3", {"app": "web2"}))
    store.apply("ADDED", service("a", "api", "4", {"app": "api"}))
    assert names(index, "a") == {"web": {"app": "web2"}, "api": {"app": "api"}}
    store.apply("DELETED", service("a", "web", "5", {"app": "web2"}))
    assert names(index, "a") == {"api": {"app": "api"}}
    store.replace([service("a", "api", "4", {"app": "api"})], "6")  # b/db gone in a relist
    assert names(index, "b") == {}
    assert names(index, "nowhere") == {}
