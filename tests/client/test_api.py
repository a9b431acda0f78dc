"""KubeApi request shapes and kube-scheduler's retry policies."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from scheduler.api.errors import ApiError
from scheduler.api.objects import Pod
from scheduler.client.api import KubeApi
from scheduler.client.config import ClientConfig
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, RestClient
from tests.client.fake_apiserver import FakeApiServer, Response, status_body

POD = Pod(uid="u-1", namespace="team-a", name="web-0", resource_version="5")


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def api(server: FakeApiServer) -> KubeApi:
    return KubeApi(RestClient(ClientConfig(server=server.url, qps=-1)))


def test_bind_posts_a_binding_with_the_pod_uid(server: FakeApiServer, api: KubeApi) -> None:
    server.handler = lambda r: Response(201, {"kind": "Status", "status": "Success"})
    api.bind(POD, "node-3")
    (req,) = server.requests
    assert (req.method, req.path) == ("POST", "/api/v1/namespaces/team-a/pods/web-0/binding")
    assert orjson.loads(req.body) == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web-0", "namespace": "team-a", "uid": "u-1"},
        "target": {"kind": "Node", "name": "node-3"},
    }


def test_bind_retries_internal_errors_but_not_conflicts(
    server: FakeApiServer, api: KubeApi
) -> None:
    answers = [Response(500, status_body(500, "InternalError")), Response(201, {})]
    server.handler = lambda r: answers.pop(0)
    api.bind(POD, "node-3")
    assert len(server.requests) == 2

    server.handler = lambda r: Response(409, status_body(409, "Conflict", "already assigned"))
    with pytest.raises(ApiError) as info:
        api.bind(POD, "node-3")
    assert info.value.conflict
    assert len(server.requests) == 3


def test_status_patch_is_a_strategic_merge_patch_retried_on_conflict(
    server: FakeApiServer, api: KubeApi
) -> None:
    answers = [Response(409, status_body(409, "Conflict")), Response(200, {})]
    server.handler = lambda r: answers.pop(0)
    patch = {"status": {"nominatedNodeName": "n1"}}
    api.patch_pod_status(POD, patch)
    first, second = server.requests
    assert (first.method, first.path) == ("PATCH", "/api/v1/namespaces/team-a/pods/web-0/status")
    assert first.headers["Content-Type"] == STRATEGIC_MERGE_PATCH
    assert orjson.loads(second.body) == patch


def test_delete_carries_a_uid_precondition_and_grace_period(
    server: FakeApiServer, api: KubeApi
) -> None:
    server.handler = lambda r: Response(200, {})
    api.delete_pod(POD, grace_period_seconds=0)
    (req,) = server.requests
    assert (req.method, req.path) == ("DELETE", "/api/v1/namespaces/team-a/pods/web-0")
    assert orjson.loads(req.body) == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": "u-1"},
        "gracePeriodSeconds": 0,
    }


def test_get_pod_returns_none_when_missing(server: FakeApiServer, api: KubeApi) -> None:
    server.handler = lambda r: Response(404, status_body(404, "NotFound"))
    assert api.get_pod("team-a", "web-0") is None


def test_names_needing_escapes_are_quoted(server: FakeApiServer, api: KubeApi) -> None:
    server.handler = lambda r: Response(200, {"metadata": {"name": "x"}})
    api.get_lease("kube-system", "a/b")
    assert (
        server.requests[0].path
        == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/a%2Fb"
    )
