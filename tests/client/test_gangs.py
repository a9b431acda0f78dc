"""The PodGroup informer when the CRD is missing (a 404 list is a state, logged once, not a
failure), when it appears later, and the member index fed by the pod informer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from scheduler.api.gang import GangRef, GangSource
from scheduler.client.backoff import Backoff
from scheduler.client.config import ClientConfig
from scheduler.client.gangs import GangInformers, MemberIndex
from scheduler.client.rest import RestClient
from tests.client.fake_apiserver import FakeApiServer, Request, Response, WatchScript, status_body
from tests.plugins.coscheduling.objects import member, pod_group_json

G = GangRef(GangSource.SCHEDULER_PLUGINS, "default", "g")


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


def test_a_missing_crd_syncs_empty_is_reported_once_and_is_picked_up_later(
    server: FakeApiServer,
) -> None:
    installed = threading.Event()
    lists_after_install = threading.Event()

    def handler(r: Request) -> Response:
        if not installed.is_set():
            return Response(404, status_body(404, "NotFound", "the server could not find it"))
        lists_after_install.set()
        return Response(
            200,
            {
                "kind": "PodGroupList",
                "metadata": {"resourceVersion": "5"},
                "items": [pod_group_json("g", 2)],
            },
        )

    server.handler = handler
    server.watches.put(WatchScript([], end="hold"))
    gangs = GangInformers(
        RestClient(ClientConfig(server=server.url, qps=-1)), backoff=Backoff(0.001, factor=1.0)
    )
    added: list[Any] = []
    seen = threading.Event()

    def on_add(obj: Any) -> None:
        added.append(obj)
        seen.set()

    gangs.informer.add_event_handler(on_add)
    with structlog.testing.capture_logs() as logs:
        gangs.informer.start()
        try:
            assert gangs.informer.wait_for_sync(10)
            assert gangs.unavailable(GangSource.SCHEDULER_PLUGINS) == (
                "the PodGroup API scheduling.x-k8s.io/v1alpha1 is not installed "
                "(no scheduling.x-k8s.io/v1alpha1 PodGroup CRD served)"
            )
            assert gangs.gang(G) is None
            # It keeps retrying in the background.
            assert server.wait_for_requests(lambda reqs: len(reqs) >= 3, 10)
            installed.set()
            assert lists_after_install.wait(10)
            assert seen.wait(10)
        finally:
            gangs.informer.stop(timeout=5)
    assert gangs.unavailable(GangSource.SCHEDULER_PLUGINS) == ""
    gang = gangs.gang(G)
    assert gang is not None and gang.min_member == 2
    assert [g.key for g in added] == ["default/g"]
    errors = [e for e in logs if e["log_level"] == "error"]
    assert len(errors) == 1
    assert errors[0]["path"] == "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
    assert not [e for e in logs if e["log_level"] == "warning"]


def test_member_index_follows_adds_label_changes_and_deletes() -> None:
    index = MemberIndex()
    add, update, delete = index.handlers()
    m0, m1 = member("m0", "g"), member("m1", "g")
    add(m0)
    add(m1)
    add(member("x", "other"))
    assert sorted(p.name for p in index.members(G)) == ["m0", "m1"]
    moved = member("m1", "other")
    update(m1, moved)
    assert [p.name for p in index.members(G)] == ["m0"]
    bound = member("m0", "g", node_name="n1")
    update(m0, bound)
    assert index.members(G) == [bound]
    delete(bound)
    assert index.members(G) == []
