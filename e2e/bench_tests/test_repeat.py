"""The benchmark's `--repeat N`: rounds of every pair, and the median of each round's ratio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import e2e.bench.__main__ as bench
from e2e.bench.options import RunOptions
from e2e.bench.report import repeat_table, table


def _figures(pods_per_s: float, lat99: float, cpu: float, rss: float) -> dict[str, float]:
    return {
        "throughput_overall": pods_per_s,
        "latency_p99_ms": lat99,
        "cpu_ms_per_pod": cpu,
        "peak_rss_mib": rss,
    }


def _record(workload: str, scheduler: str, repeat: int | None, **figures: float) -> dict[str, Any]:
    record: dict[str, Any] = {
        "workload": workload,
        "size": "1000",
        "scheduler": scheduler,
        "figures": _figures(**figures),
    }
    if repeat is not None:
        record["repeat"] = repeat
        record["repeats"] = 3
    return record


def test_run_workloads_runs_rounds_over_all_workloads_and_names_each_round(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ran: list[tuple[str, str]] = []

    def fake_run(record: Any, **_: Any) -> None:
        ran.append((record.workload, record.scheduler))

    monkeypatch.setattr(bench, "run_on_control_plane", fake_run)
    records = bench.run_workloads(
        ["SchedulingBasic", "MixedChurn"],
        "1000",
        ["kube-scheduler", "kube-pysched"],
        RunOptions(results_dir=tmp_path, repeat=2),
        control_plane=object(),  # type: ignore[arg-type]
    )
    pair = ["kube-scheduler", "kube-pysched"]
    workloads = ("SchedulingBasic", "MixedChurn")
    assert ran == [(w, s) for _ in range(2) for w in workloads for s in pair]
    assert [r.repeat for r in records] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert {r.repeats for r in records} == {2}
    saved = [json.loads(Path(str(r.json)).read_text()) for r in records]
    assert [s["repeat"] for s in saved] == [1, 1, 1, 1, 2, 2, 2, 2]

    ran.clear()
    once = bench.run_workloads(
        ["SchedulingBasic"],
        "1000",
        pair,
        RunOptions(results_dir=tmp_path),
        control_plane=object(),  # type: ignore[arg-type]
    )
    assert len(ran) == 2 and all(r.repeat is None for r in once)


def test_each_round_has_its_own_rows_and_the_medians_summarise_the_rounds() -> None:
    records = [
        _record("SchedulingBasic", "kube-scheduler", 1, pods_per_s=100, lat99=1000, cpu=4, rss=200),
        _record("SchedulingBasic", "kube-pysched", 1, pods_per_s=90, lat99=1100, cpu=3, rss=100),
        _record("SchedulingBasic", "kube-scheduler", 2, pods_per_s=100, lat99=1000, cpu=4, rss=200),
        _record("SchedulingBasic", "kube-pysched", 2, pods_per_s=105, lat99=900, cpu=3, rss=120),
        _record("SchedulingBasic", "kube-scheduler", 3, pods_per_s=80, lat99=1000, cpu=4, rss=200),
        _record("SchedulingBasic", "kube-pysched", 3, pods_per_s=100, lat99=800, cpu=5, rss=110),
        # run once: no summary row
        _record("MixedChurn", "kube-scheduler", None, pods_per_s=100, lat99=1, cpu=1, rss=1),
        _record("MixedChurn", "kube-pysched", None, pods_per_s=90, lat99=1, cpu=1, rss=1),
    ]
    md = table(records)
    assert "| SchedulingBasic #2 | 1000 | kube-pysched | live | 105 |" in md
    assert md.count("*ratio py/ks*") == 4
    assert "SchedulingBasic #3" in table(records)
    lines = repeat_table(records).splitlines()
    assert len(lines) == 3 and "MixedChurn" not in repeat_table(records)
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[:4] == ["SchedulingBasic", "1000", "live", "3"]
    # pods/s 0.90, 1.05, 1.25 -> 1.05; lat99 1.10, 0.90, 0.80 -> 0.90; cpu 0.75, 0.75, 1.25;
    # rss 0.50, 0.60, 0.55 -> 0.55
    assert cells[4:] == [
        "0.90, 1.05, 1.25",
        "1.05",
        "1.10, 0.90, 0.80",
        "0.90",
        "0.75, 0.75, 1.25",
        "0.75",
        "0.50, 0.60, 0.55",
        "0.55",
    ]


def test_a_round_without_both_schedulers_figures_is_left_out_of_the_medians() -> None:
    failed = {
        "workload": "SchedulingBasic",
        "size": "1000",
        "scheduler": "kube-pysched",
        "repeat": 2,
        "failed": "boom",
    }
    records = [
        _record("SchedulingBasic", "kube-scheduler", 1, pods_per_s=100, lat99=1, cpu=1, rss=1),
        _record("SchedulingBasic", "kube-pysched", 1, pods_per_s=90, lat99=1, cpu=1, rss=1),
        _record("SchedulingBasic", "kube-scheduler", 2, pods_per_s=100, lat99=1, cpu=1, rss=1),
        failed,
    ]
    assert repeat_table(records) == ""  # one complete pair: nothing to summarise


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--repeat", "0"], "--repeat must be 1 or more"),
        (["--workload", "SchedulingGangs", "--size", "1000", "--repeat", "2"], "once"),
    ],
)
def test_bad_repeats_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
