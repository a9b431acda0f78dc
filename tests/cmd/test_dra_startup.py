"""Start-up with DynamicResources (the default) on an API server that cannot give it
resource.k8s.io/v1: the process never waits for a sync that cannot come. A 404 (not served) or a
403 (no permission) on any of the four collections is logged once at error level, naming each
collection and what to do, and run() returns 1 before anything else starts. Other failures
decide nothing (the informers retry them as usual)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import structlog

from scheduler.client.config import ClientConfig
from scheduler.client.dra import unavailable_kinds
from scheduler.client.rest import RestClient
from scheduler.cmd.app import App, StartupError, run
from scheduler.cmd.options import Options, SecureServing
from scheduler.config.load import parse_config_text
from scheduler.features import FeatureGates
from scheduler.plugins.registry import DRA_SWITCH, in_tree_registry
from tests.client.fake_apiserver import FakeApiServer, Request, Response, status_body

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: kube-pysched
"""
GROUP = "/apis/resource.k8s.io/v1/"
NOT_FOUND = status_body(404, "NotFound", "the server could not find the requested resource")


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


def answer(dra: Callable[[str], Response]) -> Callable[[Request], Response]:
    """`dra` answers resource.k8s.io (given the collection); everything else is an empty list."""

    def handler(request: Request) -> Response:
        if request.path.startswith(GROUP):
            return dra(request.path.removeprefix(GROUP))
        return Response(200, {"metadata": {"resourceVersion": "1"}, "items": []})

    return handler


def forbidden(resource: str) -> Response:
    return Response(
        403,
        status_body(
            403,
            "Forbidden",
            f'{resource}.resource.k8s.io is forbidden: User "system:serviceaccount:ns:sa" '
            f'cannot list resource "{resource}" in API group "resource.k8s.io" at the cluster '
            "scope",
        ),
    )


def options(server: FakeApiServer, **gates: bool) -> Options:
    cfg = parse_config_text(CONFIG, set(in_tree_registry()))
    return Options(
        config=cfg,
        master=server.url,
        feature_gates=FeatureGates(gates),
        secure_serving=SecureServing(port=0),
    )


def test_an_api_server_without_resource_k8s_io_v1_ends_start_up_with_one_error(
    server: FakeApiServer,
) -> None:
    server.handler = answer(lambda _resource: Response(404, NOT_FOUND))
    with structlog.testing.capture_logs() as logs:
        code = run(options(server), registry=in_tree_registry(), install_signals=False)
    assert code == 1
    errors = [e for e in logs if e["log_level"] == "error"]
    assert len(errors) == 1, errors
    message = errors[0]["event"]
    assert message.startswith("DynamicResources cannot watch resource.k8s.io/v1: resourceclaims")
    for resource in ("resourceclaims", "resourceslices", "deviceclasses", "devicetaintrules"):
        assert f"{resource}: not served by the API server (404 NotFound" in message
    assert message.endswith(
        "Exiting: serve resource.k8s.io/v1 (Kubernetes v1.34 or newer) and grant get/list/watch "
        "on resourceclaims, resourceslices, deviceclasses and devicetaintrules (the chart's "
        "ClusterRole), or run with --feature-gates=PyschedDynamicResources=false"
    )
    # Nothing was watched: the check came first.
    assert server.watch_requests() == []


def test_a_missing_permission_is_named() -> None:
    srv = FakeApiServer().start()
    try:
        srv.handler = answer(
            lambda resource: (
                forbidden(resource)
                if resource == "resourceslices"
                else Response(200, {"metadata": {"resourceVersion": "1"}, "items": []})
            )
        )
        rest = RestClient(ClientConfig(server=srv.url))
        assert unavailable_kinds(rest) == [
            "resourceslices: no permission to list (403 Forbidden: resourceslices.resource.k8s.io "
            'is forbidden: User "system:serviceaccount:ns:sa" cannot list resource '
            '"resourceslices" in API group "resource.k8s.io" at the cluster scope)'
        ]
    finally:
        srv.stop()


def test_a_served_api_passes_and_other_failures_decide_nothing(server: FakeApiServer) -> None:
    rest = RestClient(ClientConfig(server=server.url))
    server.handler = answer(lambda _r: Response(200, {"metadata": {}, "items": []}))
    assert unavailable_kinds(rest) == []
    server.handler = answer(lambda _r: Response(400, status_body(400, "BadRequest")))
    assert unavailable_kinds(rest) == []
    lists = [r for r in server.requests if r.path.startswith(GROUP)]
    assert all(r.query == {"limit": "1"} for r in lists)


def test_switched_off_dynamic_resources_needs_nothing_of_resource_k8s_io(
    server: FakeApiServer,
) -> None:
    server.handler = answer(lambda _resource: Response(404, NOT_FOUND))
    app = App(options(server, **{DRA_SWITCH: False}), in_tree_registry())
    try:
        app.check_apis()  # nothing to check: no informer of resource.k8s.io was built
        assert app.dra is None
    finally:
        app.stop()
    assert not [r for r in server.requests if r.path.startswith(GROUP)]


def test_the_check_raises_a_startup_error(server: FakeApiServer) -> None:
    server.handler = answer(lambda _resource: Response(404, NOT_FOUND))
    app = App(options(server), in_tree_registry())
    try:
        with pytest.raises(StartupError, match="deviceclasses: not served"):
            app.check_apis()
    finally:
        app.stop()


def test_device_taint_rules_are_watched_only_with_their_gate(server: FakeApiServer) -> None:
    """DRADeviceTaintRules off: no DeviceTaintRule informer and no check of the collection
    (kube-scheduler starts the rule informer only with the gate on); the rules are then never
    applied to the slices the plugin reads."""
    rules = "devicetaintrules"
    server.handler = answer(
        lambda resource: (
            Response(404, NOT_FOUND)
            if resource == rules
            else Response(200, {"metadata": {"resourceVersion": "1"}, "items": []})
        )
    )
    app = App(options(server, DRADeviceTaintRules=False), in_tree_registry())
    try:
        assert app.dra is not None
        informers = app.dra[0]
        assert "resource.k8s.io/DeviceTaintRule" not in informers.informers
        assert sorted(informers.informers) == [
            "resource.k8s.io/DeviceClass",
            "resource.k8s.io/ResourceClaim",
            "resource.k8s.io/ResourceSlice",
        ]
        assert informers.taint_rules() == []
        app.check_apis()  # the missing collection is not watched, so not checked
    finally:
        app.stop()
    assert not [r for r in server.requests if r.path.startswith(GROUP + rules)]
    app = App(options(server), in_tree_registry())
    try:
        assert app.dra is not None
        assert "resource.k8s.io/DeviceTaintRule" in app.dra[0].informers
        with pytest.raises(StartupError, match="devicetaintrules: not served"):
            app.check_apis()
    finally:
        app.stop()
