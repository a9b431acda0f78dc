"""Informers against the real API server: order, no duplicates, resuming after cut connections."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from e2e.client.tcp_proxy import TcpProxy
from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.client import (
    ClientConfig,
    Informer,
    RestClient,
    node_informer,
    pdb_informer,
    pod_informer,
)
from scheduler.client.backoff import Backoff


class Seen:
    """What the handlers were called with, and a way to wait for something to show up."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []  # (kind, key, resourceVersion)
        self._cond = threading.Condition()

    def handlers(self, key: Callable[[Any], str]) -> tuple[Any, Any, Any]:
        def record(kind: str, obj: Any) -> None:
            with self._cond:
                self.events.append((kind, key(obj), obj.resource_version))
                self._cond.notify_all()

        return (
            lambda o: record("add", o),
            lambda old, new: record("update", new),
            lambda o: record("delete", o),
        )

    def wait_for(
        self, what: Callable[[list[tuple[str, str, str]]], bool], timeout: float = 30
    ) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: what(self.events), timeout), self.events

    def of(self, key: str) -> list[tuple[str, str, str]]:
        with self._cond:
            return [e for e in self.events if e[1] == key]


def assert_ordered_without_duplicates(events: list[tuple[str, str, str]]) -> None:
    versions = [int(rv) for _, _, rv in events]
    assert versions == sorted(versions), events
    assert len(set(versions)) == len(versions), events


def in_namespace(namespace: str) -> Callable[[dict[str, Any]], Pod | None]:
    """Parses only this test's pods; every other pod is ignored (and never stored)."""

    def transform(raw: dict[str, Any]) -> Pod | None:
        if (raw.get("metadata") or {}).get("namespace") != namespace:
            return None
        return parse_pod(raw)

    return transform


@pytest.fixture
def informers() -> Iterator[list[Informer[Any]]]:
    started: list[Informer[Any]] = []
    yield started
    for informer in started:
        informer.stop(timeout=10)


def test_pod_events_arrive_in_order_without_duplicates(
    rest: RestClient, namespace: str, informers: list[Informer[Any]]
) -> None:
    informer = pod_informer(rest, in_namespace(namespace))
    seen = Seen()
    informer.add_event_handler(*seen.handlers(lambda p: p.key))
    informers.append(informer)
    informer.start()
    assert informer.wait_for_sync(30)

    base = f"/api/v1/namespaces/{namespace}/pods"
    for name in ("a", "b"):
        rest.post(base, _pod(name))
    for i in range(3):
        rest.patch(f"{base}/a", {"metadata": {"labels": {"step": str(i)}}})
    rest.delete(f"{base}/a", {"gracePeriodSeconds": 0})

    key_a, key_b = f"{namespace}/a", f"{namespace}/b"
    seen.wait_for(lambda events: any(e[0] == "delete" and e[1] == key_a for e in events))
    kinds = [kind for kind, _, _ in seen.of(key_a)]
    assert kinds[0] == "add" and kinds[-1] == "delete"
    assert set(kinds[1:-1]) == {"update"} and len(kinds) >= 5
    assert_ordered_without_duplicates(seen.of(key_a)[:-1])
    assert [kind for kind, _, _ in seen.of(key_b)] == ["add"]
    assert informer.get(key_a) is None
    got_b = informer.get(key_b)
    assert got_b is not None and got_b.name == "b"
    # Pods of other namespaces were ignored, not stored.
    assert {p.namespace for p in informer.list()} == {namespace}


def test_terminated_pods_leave_the_pod_informer(
    rest: RestClient, namespace: str, informers: list[Informer[Any]]
) -> None:
    informer = pod_informer(rest, in_namespace(namespace))
    seen = Seen()
    informer.add_event_handler(*seen.handlers(lambda p: p.key))
    informers.append(informer)
    informer.start()
    assert informer.wait_for_sync(30)

    rest.post(f"/api/v1/namespaces/{namespace}/pods", _pod("done"))
    key = f"{namespace}/done"
    seen.wait_for(lambda events: any(e[1] == key for e in events))
    rest.patch(
        f"/api/v1/namespaces/{namespace}/pods/done/status",
        {"status": {"phase": "Succeeded"}},
    )
    # The field selector status.phase!=Succeeded turns this into a delete.
    seen.wait_for(lambda events: any(e[0] == "delete" and e[1] == key for e in events))


def test_node_events_arrive_in_order(
    rest: RestClient, make_node: Callable[..., dict[str, Any]], informers: list[Informer[Any]]
) -> None:
    informer = node_informer(rest)
    seen = Seen()
    informer.add_event_handler(*seen.handlers(lambda n: n.name))
    informers.append(informer)
    informer.start()
    assert informer.wait_for_sync(30)

    name = make_node()["metadata"]["name"]
    rest.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {"zone": "z1"}}})
    rest.patch(f"/api/v1/nodes/{name}", {"spec": {"unschedulable": True}})
    rest.delete(f"/api/v1/nodes/{name}")

    seen.wait_for(lambda events: any(e[0] == "delete" and e[1] == name for e in events))
    kinds = [kind for kind, _, _ in seen.of(name)]
    # The node controllers also update the node (taints), so count only the shape.
    assert kinds[0] == "add" and kinds[-1] == "delete"
    assert set(kinds[1:-1]) == {"update"} and len(kinds) >= 4
    assert_ordered_without_duplicates(seen.of(name)[:-1])
    assert informer.get(name) is None


def test_pdb_informer_parses_policy_v1_budgets(
    rest: RestClient, namespace: str, informers: list[Informer[Any]]
) -> None:
    informer = pdb_informer(rest)
    seen = Seen()
    informer.add_event_handler(*seen.handlers(lambda p: p.key))
    informers.append(informer)
    informer.start()
    assert informer.wait_for_sync(30)

    base = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    rest.post(
        base,
        {
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    key = f"{namespace}/web"
    seen.wait_for(lambda events: any(e[1] == key for e in events))
    pdb = informer.get(key)
    assert pdb is not None and pdb.selector is not None
    rest.delete(f"{base}/web")
    seen.wait_for(lambda events: any(e[0] == "delete" and e[1] == key for e in events))


def test_watch_resumes_from_the_last_version_after_its_connection_is_cut(
    rest: RestClient, namespace: str, informers: list[Informer[Any]]
) -> None:
    informer = pod_informer(rest, in_namespace(namespace))
    seen = Seen()
    informer.add_event_handler(*seen.handlers(lambda p: p.key))
    informers.append(informer)
    informer.start()
    assert informer.wait_for_sync(30)
    base = f"/api/v1/namespaces/{namespace}/pods"

    for round_ in range(3):
        assert _wait(informer.reflector.interrupt_watch)
        rest.post(base, _pod(f"p{round_}"))
    seen.wait_for(lambda events: {e[1] for e in events} >= {f"{namespace}/p{i}" for i in range(3)})

    assert [kind for kind, _, _ in seen.events] == ["add", "add", "add"]
    assert informer.reflector.lists == 1  # resumed, never relisted
    assert informer.reflector.watches >= 4


def test_informer_rides_out_an_api_server_outage(
    client_config: ClientConfig, rest: RestClient, namespace: str, informers: list[Informer[Any]]
) -> None:
    server = urlsplit(client_config.server)
    proxy = TcpProxy(server.hostname or "127.0.0.1", server.port or 443).up()
    via_proxy = RestClient(dataclasses.replace(client_config, server=proxy.url))
    informer = pod_informer(
        via_proxy,
        in_namespace(namespace),
        backoff=Backoff(0.05, factor=2.0, jitter=1.0, cap=1.0, steps=10),
    )
    seen = Seen()
    informer.add_event_handler(*seen.handlers(lambda p: p.key))
    informers.append(informer)
    informer.start()
    try:
        assert informer.wait_for_sync(30)
        base = f"/api/v1/namespaces/{namespace}/pods"
        rest.post(base, _pod("before"))
        seen.wait_for(lambda events: len(events) == 1)

        proxy.down()  # every connection reset, new ones refused
        rest.post(base, _pod("during-1"))
        rest.post(base, _pod("during-2"))
        rest.delete(f"{base}/before", {"gracePeriodSeconds": 0})
        watches_before = informer.reflector.watches
        proxy.up()

        before = f"{namespace}/before"
        seen.wait_for(lambda events: any(e[0] == "delete" and e[1] == before for e in events))
        assert [e[0] for e in seen.of(f"{namespace}/during-1")] == ["add"]
        assert [e[0] for e in seen.of(f"{namespace}/during-2")] == ["add"]
        assert_ordered_without_duplicates(seen.events[:-1])
        assert informer.reflector.lists == 1
        assert informer.reflector.watches > watches_before
    finally:
        informer.stop(timeout=10)
        proxy.down()
        via_proxy.close()


def _pod(name: str) -> dict[str, Any]:
    from e2e.client.conftest import pod_manifest

    return pod_manifest(name)


def _wait(check: Callable[[], bool], timeout: float = 30) -> bool:
    """Poll with a deadline (the watch reopens asynchronously after a cut)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
