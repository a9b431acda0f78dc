"""The HTTP endpoints over real HTTP on a free port."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from scheduler import metrics
from scheduler.cmd.server import DebugPages, HealthServer


class Ready:
    def __init__(self) -> None:
        self.synced = False

    def __call__(self) -> list[tuple[str, bool]]:
        return [("ping", True), ("sched-handler-sync", self.synced)]


@pytest.fixture
def server() -> Iterator[tuple[HealthServer, Ready]]:
    ready = Ready()
    srv = HealthServer("127.0.0.1", 0, readiness=ready, configz=lambda: {"parallelism": 16})
    srv.start()
    yield srv, ready
    srv.stop()


def get(
    srv: HealthServer, path: str, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    req = urllib.request.Request(f"http://127.0.0.1:{srv.port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read(), dict(err.headers)


def test_metrics_exposes_scheduler_metrics_with_values(server: tuple[HealthServer, Ready]) -> None:
    srv, _ = server
    metrics.schedule_attempts.labels("scheduled", "server-test").inc(3)
    status, body, _ = get(srv, "/metrics")
    assert status == 200
    assert (
        'scheduler_schedule_attempts_total{profile="server-test",result="scheduled"} 3.0'
        in body.decode()
    )


def test_metrics_are_gzipped_when_asked(server: tuple[HealthServer, Ready]) -> None:
    srv, _ = server
    status, body, headers = get(srv, "/metrics", {"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert b"scheduler_pending_pods" in gzip.decompress(body)


def test_readyz_follows_the_readiness_checks(server: tuple[HealthServer, Ready]) -> None:
    srv, ready = server
    status, body, _ = get(srv, "/readyz")
    assert status == 500
    assert "[+]ping ok" in body.decode() and "[-]sched-handler-sync failed" in body.decode()
    ready.synced = True
    assert get(srv, "/readyz")[:2] == (200, b"ok")


def test_health_and_configz(server: tuple[HealthServer, Ready]) -> None:
    srv, _ = server
    assert get(srv, "/healthz")[:2] == (200, b"ok")
    assert get(srv, "/livez")[:2] == (200, b"ok")
    assert json.loads(get(srv, "/configz")[1]) == {"componentconfig": {"parallelism": 16}}
    assert get(srv, "/nope")[0] == 404


def test_openmetrics_is_negotiated(server: tuple[HealthServer, Ready]) -> None:
    srv, _ = server
    accept = "application/openmetrics-text; version=1.0.0; charset=utf-8"
    status, body, headers = get(srv, "/metrics", {"Accept": accept})
    assert status == 200
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert body.decode().endswith("# EOF\n")


def test_verbose_readyz_lists_passing_checks(server: tuple[HealthServer, Ready]) -> None:
    srv, ready = server
    ready.synced = True
    status, body, _ = get(srv, "/readyz?verbose")
    assert status == 200
    assert body.decode().splitlines() == [
        "[+]ping ok",
        "[+]sched-handler-sync ok",
        "readyz check passed",
    ]
    assert get(srv, "/healthz?verbose")[1].decode().splitlines() == [
        "[+]ping ok",
        "healthz check passed",
    ]


def test_a_raising_readiness_check_is_a_failed_check() -> None:
    def broken() -> list[tuple[str, bool]]:
        raise RuntimeError("boom")

    srv = HealthServer("127.0.0.1", 0, readiness=broken, configz=dict)
    srv.start()
    try:
        status, body, _ = get(srv, "/readyz")
        assert (status, body.decode().splitlines()[0]) == (500, "[-]readiness failed")
        assert get(srv, "/healthz")[:2] == (200, b"ok")
    finally:
        srv.stop()


def test_head_has_headers_but_no_body(server: tuple[HealthServer, Ready]) -> None:
    srv, _ = server
    req = urllib.request.Request(f"http://127.0.0.1:{srv.port}/healthz", method="HEAD")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert (resp.status, resp.headers["Content-Length"], resp.read()) == (200, "2", b"")


def test_binds_exactly_the_address_and_stop_releases_the_port() -> None:
    srv = HealthServer("127.0.0.1", 0, readiness=list, configz=dict)
    assert srv.port != 0
    srv.start()
    assert get(srv, "/livez")[:2] == (200, b"ok")
    srv.stop()
    srv.stop()  # idempotent
    with pytest.raises(urllib.error.URLError):
        get(srv, "/livez")
    # The port is free again: a new server can take it.
    again = HealthServer("127.0.0.1", srv.port, readiness=list, configz=dict)
    again.stop()


def test_a_taken_port_fails_at_construction() -> None:
    srv = HealthServer("127.0.0.1", 0, readiness=list, configz=dict)
    try:
        with pytest.raises(OSError):
            HealthServer("127.0.0.1", srv.port, readiness=list, configz=dict)
    finally:
        srv.stop()


def test_livez_and_healthz_fail_with_a_failing_liveness_check() -> None:
    alive = {"leaderElection": True}
    srv = HealthServer(
        "127.0.0.1",
        0,
        readiness=list,
        liveness=lambda: [("ping", True), *alive.items()],
        configz=dict,
    )
    srv.start()
    try:
        assert get(srv, "/livez")[:2] == (200, b"ok")
        alive["leaderElection"] = False
        for path in ("/livez", "/healthz"):
            status, body, _ = get(srv, path)
            assert status == 500
            assert "[-]leaderElection failed" in body.decode().splitlines()
        assert get(srv, "/readyz")[0] == 200  # readiness does not include it
    finally:
        srv.stop()


def test_flagz_and_statusz_are_served() -> None:
    pages = DebugPages(flags={"v": "2"}, started=0.0)
    srv = HealthServer("127.0.0.1", 0, readiness=list, pages=pages)
    srv.start()
    try:
        code, body, headers = get(srv, "/flagz")
        assert code == 200 and headers["Content-Type"] == "text/plain; charset=utf-8"
        assert body.decode().startswith("\nkube-scheduler flagz\n")
        accept = {"Accept": "application/json;as=Statusz;v=v1beta1;g=config.k8s.io"}
        code, body, _ = get(srv, "/statusz", accept)
        assert code == 200
        assert "/debug" in json.loads(body)["paths"] and "/flagz" in json.loads(body)["paths"]
        assert get(srv, "/flagz", {"Accept": "application/xml"})[0] == 406
    finally:
        srv.stop()


def test_profile_path_is_a_speedscope_cpu_profile_and_absent_without_profiling() -> None:
    srv = HealthServer("127.0.0.1", 0, readiness=list)
    off = HealthServer("127.0.0.1", 0, readiness=list, pages=DebugPages(profiling=False))
    srv.start()
    off.start()
    try:
        code, body, headers = get(srv, "/debug/pprof/profile?seconds=1")
        assert code == 200, body
        assert headers["Content-Type"] == "application/json"
        assert "speedscope" in json.loads(body)["$schema"]
        code, body, _ = get(srv, "/debug/pprof/profile?seconds=1&format=collapsed")
        assert code == 200
        code, body, _ = get(srv, "/debug/pprof/profile?seconds=1&format=pprof")
        assert code == 400 and b"unknown format" in body
        assert get(off, "/debug/pprof/profile?seconds=1")[0] == 404
        assert (
            "/debug"
            not in json.loads(
                get(
                    off,
                    "/statusz",
                    {"Accept": "application/json;as=Statusz;v=v1beta1;g=config.k8s.io"},
                )[1]
            )["paths"]
        )
    finally:
        srv.stop()
        off.stop()
