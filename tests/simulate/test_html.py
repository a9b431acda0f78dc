"""The HTML report stands alone (no scripts, no outside resources) and every chart it draws has
bars: an empty chart would mean the report lost its numbers on the way."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from scheduler.logging import reset_logging
from scheduler.simulate.cli import simulate_main
from tests.simulate.test_simulate import node, owned, pod, write


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.svgs: list[int] = []  # bars per svg
        self.outside: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "svg":
            self.svgs.append(0)
        elif tag == "rect" and self.svgs:
            self.svgs[-1] += 1
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.outside.append(value)


def test_the_page_is_self_contained_and_every_chart_has_bars(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(
        tmp_path / "c.yaml",
        node("a", "2", **{"topology.kubernetes.io/zone": "z1"}),
        node("b", "4", **{"topology.kubernetes.io/zone": "z2"}),
        owned("web-1", "1", "a", "web"),
    )
    add = write(tmp_path / "add.yaml", pod("p1", "1"), pod("big", "8"), pod("p<2>", "500m"))
    html = tmp_path / "report.html"
    try:
        code = simulate_main(
            ["--snapshot", cluster, "--add", add, "--drain", "a", "--html", str(html)]
        )
    finally:
        reset_logging()
    assert code == 0
    capsys.readouterr()
    page = Page()
    text = html.read_text()
    page.feed(text)
    assert "script" not in page.tags and "link" not in page.tags
    assert page.outside == []
    # cpu, pods per node, pending reasons; no pod requests memory: a note, not a chart
    assert len(page.svgs) == 3 and all(page.svgs), page.svgs
    assert "None on these nodes." in text
    assert "p&lt;2&gt;" in text and "p<2>" not in text
    assert "0/2 nodes are available" in text
    # the room for the most common added shape (cpu=1 and cpu=8 and cpu=500m: the first)
    assert "Room for more pods of cpu=1" in text


def test_a_report_without_changes_draws_no_empty_chart(tmp_path: Path) -> None:
    cluster = write(tmp_path / "c.yaml", node("a"))
    html = tmp_path / "report.html"
    try:
        assert simulate_main(["--snapshot", cluster, "--html", str(html), "-o", "json"]) == 0
    finally:
        reset_logging()
    page = Page()
    page.feed(html.read_text())
    assert all(page.svgs), page.svgs


def test_pod_groups_have_their_table(tmp_path: Path) -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    members = [pod(f"m{i}", "3") for i in range(2)]
    for member in members:
        member["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    cluster = write(tmp_path / "c.yaml", node("a"), group, *members)
    html = tmp_path / "report.html"
    try:
        args = ["--snapshot", cluster, "--feature-gates", "GenericWorkload=true"]
        assert simulate_main([*args, "--html", str(html), "-o", "json"]) == 0
    finally:
        reset_logging()
    text = html.read_text()
    assert "<h3>Pod groups</h3>" in text
    assert "<td>default/g</td><td>2</td><td>0/2</td><td>pending</td>" in text
