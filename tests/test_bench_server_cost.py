"""e2e/bench/server_cost.py's pure parts: the report, the Go client's cache, bad arguments."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e.bench import server_cost


def test_the_report_gives_each_clients_median_per_kind() -> None:
    results: server_cost.Results = {
        "kube-pysched": {
            "bind": [(4.0, 0.4, 5.0), (5.0, 0.5, 6.0), (3.0, 0.3, 4.0)],
            "event": [(3.0, 0.5, 4.0)],
            "get": [(2.0, 0.3, 2.5), (2.2, 0.3, 2.5)],
        }
    }
    lines = server_cost.report(results).splitlines()
    assert lines[0].startswith("| client | bind: kube-apiserver | bind: client | bind: wall |")
    assert lines[2] == (
        "| kube-pysched | 4.000 | 0.400 | 5.000 | 3.000 | 0.500 | 4.000 | 2.100 | 0.300 | 2.500 |"
    )


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
