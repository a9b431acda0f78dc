"""A StartupError raised once the lease is won (delayCacheUntilActive: the informers start on
the leader-election thread) ends the process as one on the main thread does: one error line and
exit 1, with the lease released, rather than a traceback on that thread and a leader that never
schedules."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator

import pytest
import structlog

from scheduler.cmd import app
from scheduler.cmd.options import Options, SecureServing
from scheduler.config.load import parse_config_text
from scheduler.features import FeatureGates
from scheduler.plugins.registry import in_tree_registry
from tests.client.fake_apiserver import FakeApiServer, Request, Response, status_body

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
delayCacheUntilActive: true
leaderElection: {leaderElect: true}
profiles:
- schedulerName: kube-pysched
"""
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
STOPPED_WITHIN = 60.0  # seconds: a bound on a hang, not a timing expectation
LIST_FAILED = "list and watch failed"
EMPTY = {"metadata": {"resourceVersion": "1"}, "items": []}


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


class Api:
    """A lease nobody holds at first; a pod list that always fails (the pod informer never
    syncs); every other list empty."""

    def __init__(self) -> None:
        self.lease: dict[str, object] | None = None

    def __call__(self, request: Request) -> Response:
        if request.path.startswith(LEASE):
            if request.method == "GET":
                if self.lease is None:
                    return Response(404, status_body(404, "NotFound", "leases not found"))
                return Response(200, self.lease)
            lease = json.loads(request.body)
            lease["metadata"]["resourceVersion"] = "2"
            self.lease = lease
            return Response(201 if request.method == "POST" else 200, lease)
        if request.path == "/api/v1/pods":
            return Response(500, status_body(500, "InternalError", "etcd is unavailable"))
        return Response(200, EMPTY)


def test_a_startup_error_after_winning_the_lease_is_one_error_line_and_exit_1(
    server: FakeApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app, "SYNC_TIMEOUT", 0.5)  # the pod informer cannot sync at all
    server.handler = Api()
    cfg = parse_config_text(CONFIG, set(in_tree_registry()))
    options = Options(
        config=cfg,
        master=server.url,
        feature_gates=FeatureGates({}),
        secure_serving=SecureServing(port=0),
    )
    codes: list[int] = []

    def run() -> None:
        codes.append(app.run(options, registry=in_tree_registry(), install_signals=False))

    with structlog.testing.capture_logs() as logs:
        # On a thread of its own: a process that never notices the error would never return.
        runner = threading.Thread(target=run, daemon=True)
        runner.start()
        runner.join(STOPPED_WITHIN)
    assert codes == [1], "run() did not end with exit code 1"
    # Besides the pod informer's own reports of its failing lists:
    errors = [e for e in logs if e["log_level"] == "error" and e["event"] != LIST_FAILED]
    # One line (whichever informer's wait ran out first: at least the pods one cannot sync).
    assert len(errors) == 1, errors
    assert re.fullmatch(r"timed out waiting for the \w+ informer to sync", errors[0]["event"])
    # The lease was won before the informers started (and given back on the way out).
    lease_writes = [r.method for r in server.requests if r.path.startswith(LEASE)]
    assert lease_writes[:2] == ["GET", "POST"] and lease_writes[-1] == "PUT"
