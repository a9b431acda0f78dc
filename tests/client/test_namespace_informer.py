"""The namespace informer: lists and watches /api/v1/namespaces and keeps name + labels, which
InterPodAffinity's namespaceSelector reads through the Handle."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.api.namespace import Namespace, parse_namespace
from scheduler.client.backoff import Backoff
from scheduler.client.config import ClientConfig
from scheduler.client.informer import namespace_informer
from scheduler.client.rest import RestClient
from scheduler.testing.harness import poll
from tests.client.fake_apiserver import FakeApiServer, Response, WatchScript, event_line


def namespace(name: str, rv: str, labels: dict[str, str]) -> dict[str, Any]:
    meta = {"name": name, "resourceVersion": rv, "labels": labels, "uid": f"uid-{name}"}
    return {"kind": "Namespace", "metadata": meta, "spec": {"finalizers": ["kubernetes"]}}


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


def test_parse_keeps_only_name_and_labels() -> None:
    assert parse_namespace(namespace("team-a", "3", {"team": "a"})) == Namespace(
        "team-a", {"team": "a"}
    )
    assert parse_namespace({"metadata": {"name": "bare"}}) == Namespace("bare", {})


def test_lists_then_follows_label_changes(server: FakeApiServer) -> None:
    items = [namespace("default", "4", {}), namespace("team-a", "5", {"team": "a"})]
    server.handler = lambda _r: Response(
        200, {"kind": "NamespaceList", "metadata": {"resourceVersion": "5"}, "items": items}
    )
    relabelled = namespace("team-a", "6", {"team": "b"})
    server.watches.put(WatchScript([event_line("MODIFIED", relabelled)], end="hold"))
    informer = namespace_informer(
        RestClient(ClientConfig(server=server.url, qps=-1)), backoff=Backoff(0.001, factor=1.0)
    )
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        poll(lambda: informer.get("team-a") == Namespace("team-a", {"team": "b"}), "the update")
        assert sorted(ns.name for ns in informer.list()) == ["default", "team-a"]
        assert {r.path for r in server.list_requests()} == {"/api/v1/namespaces"}
    finally:
        informer.stop(timeout=5)
