"""The explanation served on the scheduler's HTTP port and read by `kube-pysched explain`:
the JSON path, its 404s, the text views (grouping, one node, every node, scores, the
preemption story) and -o json/yaml."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from scheduler.cmd.cli import main as kube_pysched_main
from scheduler.cmd.server import DebugPages, HealthServer
from scheduler.explain.cli import main
from scheduler.explain.record import ExplainStore
from scheduler.explain.render import groups, render, summary
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import Harness, poll
from tests.explain.test_record import PROFILE, TAINT, in_tree


@pytest.fixture
def cluster() -> Iterator[tuple[Harness, ExplainStore]]:
    """Six nodes, a pod that fits on none of them for three reasons, one that fits."""
    store = ExplainStore(max_pods=10)
    h = in_tree(store)
    for i in range(3):
        h.add_node(make_node(f"small-{i}", cpu="1"))
    for i in range(2):
        h.add_node(make_node(f"tainted-{i}", cpu="8", taints=[TAINT]))
    h.add_node(make_node("cordoned", cpu="8", unschedulable=True))
    h.add_pod(make_pod("big", cpu="2", scheduler_name=PROFILE))
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == 1)
    h.add_node(make_node("roomy", cpu="16"))
    h.add_node(make_node("roomier", cpu="32"))
    h.add_pod(make_pod("fits", cpu="1", scheduler_name=PROFILE))
    h.schedule_next()
    h.api.wait_for(lambda: "default/fits" in h.api.binds)
    attempt = store.find("default", "fits")
    assert attempt is not None
    poll(lambda: attempt.outcome == "Scheduled", "the binding to be recorded")
    yield h, store
    h.close()


@pytest.fixture
def server(cluster: tuple[Harness, ExplainStore]) -> Iterator[HealthServer]:
    srv = HealthServer("127.0.0.1", 0, readiness=list, pages=DebugPages(explain=cluster[1]))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    """A kubeconfig with a token user: what the client sends along (this port ignores it)."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


def get(srv: HealthServer, path: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.port}{path}", timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_record_is_served_as_json_and_missing_ones_are_a_clear_404(
    server: HealthServer, cluster: tuple[Harness, ExplainStore]
) -> None:
    h, _ = cluster
    code, body = get(server, "/debug/pysched/explain/default/big")
    assert code == 200
    condition = h.api.status_patches[0][1]["status"]["conditions"][0]
    assert body["message"] == condition["message"]
    code, body = get(server, "/debug/pysched/explain/default/nobody")
    assert code == 404
    assert body["reason"] == "NotFound"
    assert "no scheduling attempt of pod default/nobody is recorded" in str(body["message"])
    assert get(server, "/debug/pysched/explain/default")[0] == 404


def test_with_recording_off_the_path_says_so() -> None:
    srv = HealthServer("127.0.0.1", 0, readiness=list)
    srv.start()
    try:
        code, body = get(srv, "/debug/pysched/explain/default/p")
        assert code == 404 and "--explain-max-pods=0" in str(body["message"])
    finally:
        srv.stop()


def test_text_view_groups_nodes_by_verdict(cluster: tuple[Harness, ExplainStore]) -> None:
    h, store = cluster
    attempt = store.find("default", "big")
    assert attempt is not None
    record = attempt.to_json()
    assert summary(record) == h.api.status_patches[0][1]["status"]["conditions"][0]["message"]
    found = [(status["plugin"], len(nodes)) for status, nodes in groups(record)]
    assert found == [("NodeResourcesFit", 3), ("TaintToleration", 2), ("NodeUnschedulable", 1)]
    text = render(record)
    assert "Summary:   0/6 nodes are available: " in text
    assert "3      NodeResourcesFit" in text
    assert "small-0, small-1, small-2" in text
    assert "Preemption: " in text
    one = render(record, node="tainted-1")
    assert "Node tainted-1: rejected by TaintToleration" in one
    assert "small-0" not in one


def test_text_view_of_a_scheduled_pod_has_the_score_table(
    cluster: tuple[Harness, ExplainStore],
) -> None:
    h, store = cluster
    attempt = store.find("default", "fits")
    assert attempt is not None
    record = attempt.to_json()
    node = h.api.binds["default/fits"]
    assert summary(record) == f"Successfully assigned default/fits to {node}"
    text = render(record)
    assert f"{node} *" in text and f"* selected: {node}" in text
    assert "NodeResourcesFit (x1)" in text


def test_cli_prints_the_explanation_from_the_endpoint(
    server: HealthServer, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = f"http://127.0.0.1:{server.port}"
    base = ["explain", "--kubeconfig", kubeconfig, "--endpoint", endpoint]
    assert main([*base, "big", "-n", "default"]) == 0
    out = capsys.readouterr().out
    assert "Outcome:   Unschedulable" in out and "TaintToleration" in out
    assert main([*base, "big", "-o", "json"]) == 0  # the context has no namespace: default
    assert json.loads(capsys.readouterr().out)["outcome"] == "Unschedulable"
    # `kube-pysched explain ...` is the same command.
    assert kube_pysched_main([*base, "fits", "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["outcome"] == "Scheduled"
    assert main([*base, "nobody"]) == 1
    assert "no scheduling attempt of pod default/nobody" in capsys.readouterr().err


def test_through_port_forwards_each_replica_is_asked_until_one_has_the_record(
    monkeypatch: pytest.MonkeyPatch, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A standby replica has no records (404): the next one is asked; the scheduler's
    certificate is not verified through a tunnel unless --scheduler-ca is given."""
    from contextlib import contextmanager

    import scheduler.explain.cli as explain_cli
    from scheduler.explain.cli import ExplainError

    tunnels: list[tuple[str, str, int]] = []
    asked: list[tuple[str, bool]] = []

    @contextmanager
    def forward(namespace: str, pod: str, port: int, **_: object) -> Iterator[int]:
        tunnels.append((namespace, pod, port))
        yield 40000 + len(tunnels)

    def get(config: object, path: str) -> dict[str, object]:
        server, verify = config.server, config.verify_tls  # type: ignore[attr-defined]
        asked.append((server, verify))
        if server.endswith(":40001"):
            raise ExplainError("no scheduling attempt of pod default/p is recorded: ...")
        return {"pod": {"namespace": "default", "name": "p"}, "outcome": "Scheduled"}

    monkeypatch.setattr(explain_cli, "forward", forward)
    monkeypatch.setattr(explain_cli, "_get", get)
    monkeypatch.setattr(explain_cli, "_scheduler_pods", lambda *_: ["standby", "leader"])
    assert main(["explain", "--kubeconfig", kubeconfig, "p", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "Scheduled"
    assert tunnels == [("kube-system", "standby", 10259), ("kube-system", "leader", 10259)]
    assert asked == [("https://127.0.0.1:40001", False), ("https://127.0.0.1:40002", False)]
