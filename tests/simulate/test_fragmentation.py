"""The room left for more pods of a shape, before and after a run, by NodeResourcesFit's own
check: resources and pod counts, cordoned nodes left out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.api.parse import parse_pod
from scheduler.logging import reset_logging
from scheduler.simulate.cli import simulate_main
from scheduler.simulate.fragmentation import ShapeError, common_shape, parse_shape
from tests.simulate.test_simulate import node, pod, run, write


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    yield
    reset_logging()


def test_room_before_and_after_counts_whole_pods_per_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path / "c.yaml", node("a"), node("b"), pod("old", "1500m", "a"))
    added = write(tmp_path / "add.yaml", pod("new", "1500m"))
    out = run(capsys, "--snapshot", cluster, "--add", added, "--shape", "cpu=1")
    assert out["shape"] == {"cpu": "1"}
    # a: 4 - 1.5 = 2.5 free -> 2; b: 4 -> 4. After, "new" on b (least allocated): 2 + 2.
    assert out["configs"][0]["placed"] == {"default/new": "b"}
    assert out["configs"][0]["headroom"] == {
        "before": 6,
        "after": 4,
        "nodes_before": 2,
        "nodes_after": 2,
    }


def test_the_pod_count_limits_the_room_and_cordoned_nodes_have_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = node("a")
    small["status"]["allocatable"]["pods"] = "3"
    cordoned = node("b")
    cordoned["spec"] = {"unschedulable": True}
    cluster = write(tmp_path / "c.yaml", small, cordoned, pod("old", "100m", "a"))
    out = run(capsys, "--snapshot", cluster, "--shape", "cpu=100m,memory=1Gi")
    assert out["configs"][0]["headroom"]["before"] == 2


def test_the_default_shape_is_the_most_common_request_among_the_added_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = [parse_pod(pod(n, cpu)) for n, cpu in [("x", "2"), ("y", "500m"), ("z", "500m")]]
    assert common_shape(pods) == {"cpu": "500m"}
    sized = pod("m", "2")
    sized["spec"]["containers"][0]["resources"]["requests"]["memory"] = "2048Mi"
    assert common_shape([parse_pod(sized)]) == {"cpu": "2", "memory": "2Gi"}
    cluster = write(tmp_path / "c.yaml", node("a"))
    added = write(tmp_path / "add.yaml", pod("x", "2"), pod("y", "500m"), pod("z", "500m"))
    out = run(capsys, "--snapshot", cluster, "--add", added)
    assert out["shape"] == {"cpu": "500m"}
    assert out["configs"][0]["headroom"]["after"] == 2  # 4 - 3 = 1 cpu free
    table = simulate_main(["--snapshot", cluster, "--add", added])
    assert table == 0
    assert "room for more pods of cpu=500m: 8 before (1 nodes), 2 after (1 nodes)" in (
        capsys.readouterr().out
    )


def test_without_added_pods_or_a_shape_there_is_no_room_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(capsys, "--snapshot", write(tmp_path / "c.yaml", node("a")))
    assert out["shape"] == {}
    assert out["configs"][0]["headroom"] is None


@pytest.mark.parametrize("text", ["cpu", "cpu=", "cpu=x", "cpu=0"])
def test_a_bad_shape_is_an_error(text: str) -> None:
    with pytest.raises(ShapeError, match="--shape"):
        parse_shape(text)
