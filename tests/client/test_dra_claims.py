"""DynamicResources' claim writes: kube-scheduler's bindClaim (finalizer in a normal update,
then allocation and reservedFor in a status update, conflicts retried after a read), the
Unreserve patch and PostFilter's deallocation."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from scheduler.api.dra import parse_resource_claim
from scheduler.client.api import KubeApi
from scheduler.client.config import ClientConfig
from scheduler.client.dra import DELETE_PROTECTION
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, RestClient
from tests.client.fake_apiserver import FakeApiServer, Request, Response, status_body

PATH = "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/gpu"
ALLOCATION = {
    "devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "g0"}]}
}
CONSUMER = {"resource": "pods", "name": "p", "uid": "pod-uid"}


def _claim_json(rv: str = "5", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "gpu", "namespace": "ns", "uid": "c1", "resourceVersion": rv},
        "spec": {"devices": {"requests": []}},
        "status": status,
    }


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def api(server: FakeApiServer) -> KubeApi:
    return KubeApi(RestClient(ClientConfig(server=server.url, qps=-1)))


def _echo(stored: dict[str, Any]) -> Any:
    """GET answers `stored`; PUTs store their body with the next resourceVersion."""

    def handle(req: Request) -> Response:
        if req.method == "GET":
            return Response(200, copy.deepcopy(stored))
        body = orjson.loads(req.body)
        body["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 1)
        stored.clear()
        stored.update(body)
        return Response(200, copy.deepcopy(body))

    return handle


def test_reserve_adds_finalizer_then_allocation_and_consumer(
    server: FakeApiServer, api: KubeApi
) -> None:
    stored = _claim_json()
    server.handler = _echo(stored)
    claim = parse_resource_claim(_claim_json())
    result = api.reserve_resource_claim(claim, ALLOCATION, CONSUMER, allocation_timestamp=True)
    get, put, put_status = server.requests
    assert (get.method, put.method, put.path) == ("GET", "PUT", PATH)
    assert orjson.loads(put.body)["metadata"]["finalizers"] == [DELETE_PROTECTION]
    assert put_status.path == PATH + "/status"
    status = orjson.loads(put_status.body)["status"]
    assert status["reservedFor"] == [CONSUMER]
    assert status["allocation"]["devices"] == ALLOCATION["devices"]
    assert "allocationTimestamp" in status["allocation"]
    assert result.resource_version == "7"
    assert result.allocation is not None and result.reserved_for == (CONSUMER,)


def test_reserve_of_an_allocated_claim_only_appends_the_consumer(
    server: FakeApiServer, api: KubeApi
) -> None:
    stored = _claim_json(allocation=ALLOCATION, reservedFor=[{"uid": "other"}])
    stored["metadata"]["finalizers"] = [DELETE_PROTECTION]
    server.handler = _echo(stored)
    api.reserve_resource_claim(
        parse_resource_claim(stored), None, CONSUMER, allocation_timestamp=False
    )
    assert [r.method for r in server.requests] == ["GET", "PUT"]
    assert orjson.loads(server.requests[1].body)["status"]["reservedFor"] == [
        {"uid": "other"},
        CONSUMER,
    ]


def test_reserve_retries_a_conflict_after_reading_again(
    server: FakeApiServer, api: KubeApi
) -> None:
    stored = _claim_json()
    stored["metadata"]["finalizers"] = [DELETE_PROTECTION]
    echo = _echo(stored)
    conflicts = [Response(409, status_body(409, "Conflict"))]

    def handle(req: Request) -> Response:
        if req.method == "PUT" and conflicts:
            return conflicts.pop()
        return echo(req)  # type: ignore[no-any-return]

    server.handler = handle
    api.reserve_resource_claim(
        parse_resource_claim(stored), ALLOCATION, CONSUMER, allocation_timestamp=False
    )
    assert [r.method for r in server.requests] == ["GET", "PUT", "GET", "PUT"]


def test_reserve_refuses_a_claim_allocated_elsewhere(server: FakeApiServer, api: KubeApi) -> None:
    server.handler = _echo(_claim_json(allocation=ALLOCATION))
    with pytest.raises(RuntimeError, match="claim ns/gpu got allocated elsewhere in the meantime"):
        api.reserve_resource_claim(
            parse_resource_claim(_claim_json()), ALLOCATION, CONSUMER, allocation_timestamp=False
        )


def test_unreserve_is_a_strategic_merge_patch_deleting_the_consumer(
    server: FakeApiServer, api: KubeApi
) -> None:
    server.handler = lambda r: Response(200, _claim_json())
    api.unreserve_resource_claim(parse_resource_claim(_claim_json()), "pod-uid")
    (req,) = server.requests
    assert (req.method, req.path) == ("PATCH", PATH + "/status")
    assert req.headers["Content-Type"] == STRATEGIC_MERGE_PATCH
    assert orjson.loads(req.body) == {
        "metadata": {"uid": "c1"},
        "status": {"reservedFor": [{"$patch": "delete", "uid": "pod-uid"}]},
    }


def test_deallocate_clears_status_at_the_seen_version(server: FakeApiServer, api: KubeApi) -> None:
    stored = _claim_json(rv="9", allocation=ALLOCATION, reservedFor=[], devices=[])
    server.handler = _echo(stored)
    seen = parse_resource_claim(_claim_json(rv="8", allocation=ALLOCATION))
    api.deallocate_resource_claim(seen)
    body = orjson.loads(server.requests[1].body)
    assert body["metadata"]["resourceVersion"] == "8"
    assert body["status"] == {}
