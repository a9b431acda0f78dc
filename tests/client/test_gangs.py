"""The PodGroup informers when their API is missing (a 404 list is a state, logged once, not
a failure), when it appears later, the v1beta1 one only with GenericWorkload, and the member
index fed by the pod informer."""

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
from scheduler.features import FeatureGates
from scheduler.testing import make_pod
from tests.api.kube_pod_groups import kube_pod_group_json
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


# --- the second source: scheduling.k8s.io/v1beta1 PodGroups (gate GenericWorkload) ----------

K = GangRef(GangSource.KUBERNETES, "default", "g")
KUBE_PATH = "/apis/scheduling.k8s.io/v1beta1/podgroups"
X_PATH = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"


def _list(*items: dict[str, Any]) -> Response:
    return Response(200, {"kind": "List", "metadata": {"resourceVersion": "5"}, "items": items})


def test_with_the_gate_off_kube_pod_groups_are_not_watched(server: FakeApiServer) -> None:
    server.handler = lambda r: _list(pod_group_json("g", 2))
    server.watches.put(WatchScript([], end="hold"))
    gangs = GangInformers(RestClient(ClientConfig(server=server.url, qps=-1)))
    assert list(gangs.informers) == [GangSource.SCHEDULER_PLUGINS]
    gangs.informer.start()
    try:
        assert gangs.informer.wait_for_sync(10)
    finally:
        gangs.informer.stop(timeout=5)
    assert {r.path for r in server.requests} == {X_PATH}
    assert gangs.gang(K) is None
    assert gangs.unavailable(GangSource.KUBERNETES) == (
        "the PodGroup API scheduling.k8s.io/v1beta1 is not read: kube-pysched runs without "
        "--feature-gates=GenericWorkload=true"
    )
    assert gangs.unavailable(GangSource.SCHEDULER_PLUGINS) == ""


def test_with_the_gate_on_an_unserved_v1beta1_is_reported_once_and_picked_up_later(
    server: FakeApiServer,
) -> None:
    served = threading.Event()
    listed_after = threading.Event()

    def handler(r: Request) -> Response:
        if r.path == X_PATH:
            return _list()
        if not served.is_set():
            return Response(404, status_body(404, "NotFound", "the server could not find it"))
        listed_after.set()
        return _list(kube_pod_group_json("g", min_count=3))

    server.handler = handler
    for _ in range(2):
        server.watches.put(WatchScript([], end="hold"))
    gangs = GangInformers(
        RestClient(ClientConfig(server=server.url, qps=-1)),
        FeatureGates({"GenericWorkload": True}),
        backoff=Backoff(0.001, factor=1.0),
    )
    kube = gangs.informers[GangSource.KUBERNETES]
    assert list(gangs.informers) == [GangSource.SCHEDULER_PLUGINS, GangSource.KUBERNETES]
    seen = threading.Event()
    kube.add_event_handler(lambda obj: seen.set())
    informers = list(gangs.informers.values())
    with structlog.testing.capture_logs() as logs:
        for informer in informers:
            informer.start()
        try:
            assert all(informer.wait_for_sync(10) for informer in informers)
            assert gangs.unavailable(GangSource.KUBERNETES) == (
                "the PodGroup API scheduling.k8s.io/v1beta1 is not served (kube-apiserver "
                "needs --feature-gates=GenericWorkload=true "
                "--runtime-config=scheduling.k8s.io/v1beta1=true)"
            )
            assert gangs.unavailable(GangSource.SCHEDULER_PLUGINS) == ""
            assert gangs.gang(K) is None
            assert server.wait_for_requests(
                lambda reqs: sum(r.path == KUBE_PATH for r in reqs) >= 3, 10
            )
            served.set()
            assert listed_after.wait(10)
            assert seen.wait(10)
        finally:
            for informer in informers:
                informer.stop(timeout=5)
    assert gangs.unavailable(GangSource.KUBERNETES) == ""
    gang = gangs.gang(K)
    assert gang is not None and gang.min_member == 3 and gang.is_gang
    assert gangs.gang(G) is None  # the same name in the other API is another group
    errors = [e for e in logs if e["log_level"] == "error"]
    assert [e["path"] for e in errors] == [KUBE_PATH]


def test_member_index_keys_field_members_by_their_api() -> None:
    index = MemberIndex()
    add, _, delete = index.handlers()
    k = make_pod("k", uid="uid-k", pod_group_name="g")
    x = member("x", "g")
    add(k)
    add(x)
    assert index.members(K) == [k]
    assert index.members(G) == [x]
    delete(k)
    assert index.members(K) == []
