"""`kubectl pysched explain` for a pod whose ResourceClaim no device satisfies: the record
names DynamicResources and upstream's reason, per node, in the summary and the text view."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.explain.render import groups, render, summary
from scheduler.logging import reset_logging
from scheduler.plugins.registry import full_registry
from scheduler.simulate.whatif import WhatIf, prepare, run_one
from tests.simulate.test_dra import cluster


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    yield
    reset_logging()


def test_an_unsatisfiable_claim_is_explained_with_the_dra_reason(tmp_path: Path) -> None:
    whatif = WhatIf(snapshot=[cluster(tmp_path)])
    cfg, sim = run_one("defaults", None, prepare(whatif), full_registry(), whatif)
    assert [p.pod for p in cfg.pending] == ["default/stuck"]
    attempt = sim.explain.find("default", "stuck")
    assert attempt is not None
    record = attempt.to_json()
    assert summary(record).startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    found = [(status["plugin"], status.get("reasons"), nodes) for status, nodes in groups(record)]
    assert found == [("DynamicResources", ["cannot allocate all claims"], ["a"])]
    text = render(record)
    assert "DynamicResources" in text and "cannot allocate all claims" in text
    assert "Node a: rejected by DynamicResources" in render(record, node="a")
