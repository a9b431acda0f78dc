"""Background arrivals (e2e/bench): a background whose pods fit is capped so it cannot take every
node from the measured pods, and the arrivals stop at the cap."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest

from e2e.bench.runner import LEAD_IN_ROUNDS, arrive_every
from e2e.bench.workload import WORKLOADS_DIR, load_workloads, millicpu


def test_a_fitting_background_leaves_nodes_for_every_measured_pod() -> None:
    checked = 0
    for workload in load_workloads().values():
        background = workload.background
        capacity = millicpu(str(workload.nodes.capacity["cpu"]))
        if background is None or millicpu(background.template.requests["cpu"]) > capacity:
            continue
        assert workload.init is not None
        for size in workload.sizes.values():
            per_node_init = size.init_pods // size.nodes
            room = capacity - per_node_init * millicpu(workload.init.requests["cpu"])
            per_node = room // millicpu(workload.measured.requests["cpu"])
            assert size.background_pods is not None, (workload.name, size.name)
            left = size.nodes - size.background_pods
            assert left >= math.ceil(size.measured_pods / per_node), (workload.name, size.name)
            checked += 1
    assert checked >= 3  # PreemptionAsync's sizes


def test_a_fitting_background_without_a_cap_is_refused(tmp_path: Path) -> None:
    text = (WORKLOADS_DIR / "PreemptionAsync.yaml").read_text()
    (tmp_path / "PreemptionAsync.yaml").write_text(text.replace(", backgroundPods: 7", ""))
    with pytest.raises(ValueError, match="size small needs backgroundPods"):
        load_workloads(tmp_path)


def test_arrivals_stop_at_the_cap_and_release_the_lead_in_once() -> None:
    arrived: list[int] = []
    lead_ins: list[int] = []
    arrive_every(
        threading.Event(), 0, arrived.append, lambda: lead_ins.append(len(arrived)), limit=7
    )
    assert arrived == list(range(7)) and lead_ins == [LEAD_IN_ROUNDS]


def test_a_cap_below_the_lead_in_releases_it_after_the_last_arrival() -> None:
    arrived: list[int] = []
    lead_ins: list[int] = []
    arrive_every(
        threading.Event(), 0, arrived.append, lambda: lead_ins.append(len(arrived)), limit=2
    )
    assert arrived == [0, 1] and lead_ins == [2]


def test_uncapped_arrivals_run_until_stopped() -> None:
    stop = threading.Event()
    arrived: list[int] = []

    def arrive(i: int) -> None:
        arrived.append(i)
        if i == 9:
            stop.set()

    arrive_every(stop, 0, arrive, lambda: None)
    assert arrived == list(range(10))
