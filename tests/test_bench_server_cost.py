"""e2e/bench/server_cost.py's pure parts: the report, the Go client's cache, bad arguments."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e.bench import server_cost


def test_the_report_gives_medians_and_each_rounds_difference_from_the_first_client() -> None:
    results: server_cost.Results = {
        "kube-pysched": {
            "bind": [(4.0, 0.4, 5.0), (5.0, 0.5, 6.0), (3.0, 0.3, 4.0)],
            "event": [(3.0, 0.5, 4.0), (3.0, 0.5, 4.0), (3.0, 0.5, 4.0)],
            "get": [(2.0, 0.3, 2.5), (2.2, 0.3, 2.5), (2.4, 0.3, 2.5)],
        },
        "client-go": {
            "bind": [(4.5, 0.6, 5.0), (5.5, 0.6, 6.0), (3.5, 0.6, 4.0)],
            "event": [(2.0, 0.6, 4.0), (3.0, 0.6, 4.0), (4.0, 0.6, 4.0)],
            "get": [(2.0, 0.6, 2.5), (2.2, 0.6, 2.5), (2.4, 0.6, 2.5)],
        },
    }
    lines = server_cost.report(results).splitlines()
    assert lines[0].startswith("| client | bind: kube-apiserver | bind: client | bind: wall |")
    assert lines[2] == (
        "| kube-pysched | 4.000 | 0.400 | 5.000 | 3.000 | 0.500 | 4.000 | 2.200 | 0.300 | 2.500 |"
    )
    # bind: +0.5 every round (no spread); event: -1, 0, +1 (mean 0, SEM 1/sqrt(3)); get: 0
    assert lines[-1] == "| client-go | +0.500 ± 0.000 | +0.000 ± 0.577 | +0.000 ± 0.000 |"


def test_the_go_client_is_built_once_per_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBE_PYSCHED_CACHE", str(tmp_path))
    monkeypatch.setattr(server_cost, "_go", lambda: "/nonexistent/go")  # a build would fail
    first = tmp_path / "servercost"
    assert not first.exists()
    with pytest.raises(FileNotFoundError):
        server_cost.build_go_client()
    built = next((tmp_path / "servercost").iterdir()) / "servercost"
    built.write_text("#!/bin/sh\n")
    assert server_cost.build_go_client() == built  # the cached one, no build


def test_an_existing_cluster_needs_the_api_servers_pid() -> None:
    with pytest.raises(SystemExit, match="--apiserver-pid"):
        server_cost.main(["--kubeconfig", os.devnull])
