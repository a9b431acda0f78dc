"""Preemption on a real control plane: kube-pysched's DefaultPreemption against kube-scheduler's.

The design doc's Examples 1-4 and a PDB case (e2e/preemption_scenarios.py) are run once per
scheduler - the control plane's kube-scheduler ("default-scheduler"), kube-pysched, and for
Example 1 kube-pysched with ``SchedulerAsyncPreemption=false`` - all at the same time, each
in its own namespace on its own nodes (module fixture ``runs``). The per-example tests check
the behaviour the doc describes on every scheduler's record; the comparison test checks that
kube-pysched's records (nominations, victims, conditions, events, messages, placements,
ordering facts) equal kube-scheduler's. Asynchronous preemption and the failure of its API
calls are checked on kube-pysched alone.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e import preemption_scenarios as sc
from e2e.conftest import Cluster
from e2e.pysched import Pysched, metric_value
from e2e.test_scheduling import Factory, profile_config, unique

KUBE_SCHEDULER = "kube-scheduler"
PYSCHED = "kube-pysched"
PYSCHED_SYNC = "kube-pysched-sync"

Scenario = Callable[[sc.Env], sc.Record]

SCENARIOS: dict[str, Scenario] = {
    "example1": sc.example1,
    "example2": sc.example2,
    "example3": sc.example3,
    "example4": sc.example4,
    "too-small-elsewhere": sc.room_too_small_elsewhere,
    "pdb": sc.pdb_choice,
    "no-pdb": lambda env: sc.pdb_choice(env, with_pdb=False),
}

#: (scheduler, scenario) pairs run by the module fixture.
RUNS = [(s, name) for s in (KUBE_SCHEDULER, PYSCHED) for name in SCENARIOS] + [
    (PYSCHED_SYNC, "example1")
]

VICTIM_CONDITION = {
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "<scheduler>: preempting to accommodate a higher priority pod",
}


@dataclass
class Runs:
    records: dict[tuple[str, str], sc.Record]
    errors: dict[tuple[str, str], str]
    metrics: dict[str, str]  # kube-pysched's /metrics after the runs, by scheduler label
    logs: dict[str, list[dict[str, Any]]]  # kube-pysched's JSON log lines, by scheduler label

    def get(self, scheduler: str, scenario: str) -> sc.Record:
        key = (scheduler, scenario)
        if key in self.errors:
            pytest.fail(f"{scenario} with {scheduler} failed:\n{self.errors[key]}")
        return self.records[key]


@pytest.fixture(scope="module")
def priority_classes(api_client: k8s.ApiClient) -> Iterator[dict[int, str]]:
    names = sc.create_priority_classes(api_client)
    try:
        yield names
    finally:
        sc.delete_priority_classes(api_client, names)


def _run(
    cluster: Cluster, scheduler_name: str, classes: dict[int, str], label: str, scenario: Scenario
) -> sc.Record:
    api = cluster.api_client()
    try:
        core = k8s.CoreV1Api(api)
        with sc.scenario_env(core, api, scheduler_name, classes, label) as env:
            return scenario(env)
    finally:
        api.close()


@pytest.fixture(scope="module")
def runs(
    cluster: Cluster,
    priority_classes: dict[int, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Runs]:
    workdir: Path = tmp_path_factory.mktemp("preemption")
    names = {
        KUBE_SCHEDULER: "default-scheduler",
        PYSCHED: unique("pysched"),
        PYSCHED_SYNC: unique("pysched-sync"),
    }
    procs = {
        PYSCHED: Pysched(
            cluster.kubeconfig, profile_config(names[PYSCHED]), workdir=workdir, name=PYSCHED
        ),
        PYSCHED_SYNC: Pysched(
            cluster.kubeconfig,
            profile_config(names[PYSCHED_SYNC]),
            workdir=workdir,
            name=PYSCHED_SYNC,
            # -v 2: the per-victim "preemptor pod preempted victim pod" line is V(2).
            extra_args=["--feature-gates", "SchedulerAsyncPreemption=false", "--v", "2"],
        ),
    }
    try:
        for proc in procs.values():
            proc.start()
        result = Runs({}, {}, {}, {})
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(RUNS)) as pool:
            futures = {
                pool.submit(
                    _run, cluster, names[s], priority_classes, f"{s[:9]}-{n}", SCENARIOS[n]
                ): (s, n)
                for s, n in RUNS
            }
            for future in concurrent.futures.as_completed(futures):
                key = futures[future]
                try:
                    result.records[key] = future.result()
                except Exception as exc:  # reported by the tests that need this run
                    logs = "".join(
                        f"\n----- {label} log tail -----\n{proc.tail(60)}"
                        for label, proc in procs.items()
                        if label == key[0]
                    )
                    result.errors[key] = f"{type(exc).__name__}: {exc}{logs}"
        for label, proc in procs.items():
            result.metrics[label] = proc.metrics()
            result.logs[label] = list(proc.log_records())
        if dump := os.environ.get("E2E_PREEMPTION_RECORDS"):  # for looking at the runs
            Path(dump).write_text(
                json.dumps(
                    {f"{s} {n}": r for (s, n), r in sorted(result.records.items())}
                    | {f"{s} {n}": e for (s, n), e in sorted(result.errors.items())},
                    indent=1,
                )
            )
        yield result
    finally:
        for proc in procs.values():
            proc.stop()


def _victims_marked(record: sc.Record, victims: list[str], preemptor: str, node: str) -> None:
    assert record["victims"] == victims
    for v in victims:
        assert record["disruption"][v] == VICTIM_CONDITION
        notes = [e["note"] for e in record["preempted_events"][v]]
        assert f"Preempted by pod <uid:{preemptor}> on node {node}" in notes, notes
        assert all(e["action"] == "Preempting" for e in record["preempted_events"][v])
        # Preempted once: later attempts see it terminating and make no second call.
        assert sum(e["count"] for e in record["preempted_events"][v]) == 1, v


ALL = [KUBE_SCHEDULER, PYSCHED]


@pytest.mark.parametrize("scheduler", [*ALL, PYSCHED_SYNC])
def test_example1_c_preempts_a_and_b_and_d_cannot_take_the_room(runs: Runs, scheduler: str) -> None:
    r = runs.get(scheduler, "example1")
    assert r["nominated"] == {"c": ["node1", None]}  # cleared by the binding
    _victims_marked(r, ["a", "b"], "c", "node1")
    assert r["placements"] == {"a": "deleted", "b": "deleted", "c": "node1", "d": None}
    assert r["facts"] == {
        "d_ever_bound": False,  # not even while only A was left: C's nomination counts
        "b_gone_before_a": True,
        "c_bound_after_a_and_b_gone": True,
    }
    assert "preemption: found a potential placement" in r["first_message"]["c"]
    assert "preemption: " in r["first_message"]["d"]
    assert "No preemption victims found for incoming pod" in r["first_message"]["d"]


@pytest.mark.parametrize("scheduler", ALL)
def test_example2_c_bound_to_freed_node2_and_d_gets_node1(runs: Runs, scheduler: str) -> None:
    r = runs.get(scheduler, "example2")
    assert r["nominated"] == {"c": ["node1", None]}  # D is never nominated
    _victims_marked(r, ["a", "b"], "c", "node1")
    assert r["placements"] == {
        "a": "deleted",
        "b": "deleted",
        "c": "node2",
        "d": "node1",
        "e": "deleted",
    }
    assert r["facts"] == {"c_bound_while_a_terminating": True, "d_bound_after_b_gone": True}


@pytest.mark.parametrize("scheduler", ALL)
def test_example3_d_bound_to_node2_while_victims_terminate(runs: Runs, scheduler: str) -> None:
    r = runs.get(scheduler, "example3")
    assert r["nominated"] == {"c": ["node1", None]}
    _victims_marked(r, ["a", "b"], "c", "node1")
    assert r["placements"] == {
        "a": "deleted",
        "b": "deleted",
        "c": "node1",
        "d": "node2",
        "e": "node2",
    }
    assert r["facts"] == {
        "d_bound_while_a_and_b_terminating": True,
        "c_bound_after_a_and_b_gone": True,
    }


@pytest.mark.parametrize("scheduler", ALL)
def test_example4_f_takes_c_s_nomination(runs: Runs, scheduler: str) -> None:
    r = runs.get(scheduler, "example4")
    assert r["nominated"] == {"c": ["node1", None], "f": ["node1", None]}
    # A and B were already terminating when F preempted: no second API call or event.
    _victims_marked(r, ["a", "b"], "c", "node1")
    assert r["placements"] == {"a": "deleted", "b": "deleted", "c": None, "d": None, "f": "node1"}
    facts = r["facts"]
    assert facts["c_cleared_after_f_nominated"] is True
    assert facts["f_bound_after_a_and_b_gone"] is True
    assert facts["c_ever_bound"] is False
    assert facts["d_ever_bound"] is False
    assert (
        "preemption: found a potential placement for pod on node node1, preempting 2 victims"
        in (r["first_message"]["f"])
    )


@pytest.mark.parametrize("scheduler", ALL)
def test_a_preemptor_waits_for_its_victims_when_the_room_elsewhere_is_too_small(
    runs: Runs, scheduler: str
) -> None:
    r = runs.get(scheduler, "too-small-elsewhere")
    assert r["nominated"] == {"c": ["node1", None]}
    _victims_marked(r, ["a", "b"], "c", "node1")
    assert r["placements"] == {
        "a": "deleted",
        "b": "deleted",
        "c": "node1",
        "e": "node2",
        "g": "deleted",
    }
    assert r["facts"] == {
        "g_gone_while_a_and_b_terminating": True,
        "c_bound_after_a_and_b_gone": True,
    }


@pytest.mark.parametrize("scheduler", ALL)
def test_pdb_protected_victim_is_avoided(runs: Runs, scheduler: str) -> None:
    without = runs.get(scheduler, "no-pdb")
    assert without["nominated"] == {"p": ["node1", None]}  # x has the lower priority
    _victims_marked(without, ["x"], "p", "node1")
    assert without["placements"] == {"x": "deleted", "y": "node2", "p": "node1"}

    r = runs.get(scheduler, "pdb")
    assert r["nominated"] == {"p": ["node2", None]}  # x is covered by a PDB allowing nothing
    _victims_marked(r, ["y"], "p", "node2")
    assert r["placements"] == {"x": "node1", "y": "deleted", "p": "node2"}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_same_records_as_kube_scheduler(runs: Runs, scenario: str) -> None:
    reference = runs.get(KUBE_SCHEDULER, scenario)
    ours = runs.get(PYSCHED, scenario)
    differing = {k: (reference[k], ours.get(k)) for k in reference if reference[k] != ours.get(k)}
    assert not differing, f"(kube-scheduler, kube-pysched) differ: {differing}"
    if scenario == "example1":
        assert runs.get(PYSCHED_SYNC, scenario) == reference


def _pysched_metric(runs: Runs, label: str, name: str, **labels: str) -> float:
    return metric_value(runs.metrics[label], name, labels or None) or 0.0


def test_preemption_metrics(runs: Runs) -> None:
    """kube-pysched ran examples 1-4, too-small-elsewhere and both PDB cases: 8 preemptions,
    14 victims."""
    for scenario in SCENARIOS:
        runs.get(PYSCHED, scenario)
    assert _pysched_metric(runs, PYSCHED, "scheduler_preemption_attempts_total") >= 8
    assert _pysched_metric(runs, PYSCHED, "scheduler_preemption_victims_count") == 8
    # Examples 1-4 and too-small-elsewhere: 2 victims each, F's preemption selects A and B
    # again; PDB cases: 1 each.
    assert _pysched_metric(runs, PYSCHED, "scheduler_preemption_victims_sum") == 14
    # F's victims were all terminating already: like kube-scheduler, no goroutine is started
    # for it (prepareCandidateAsync returns early), so 7 goroutines for 8 preemptions.
    goroutines = "scheduler_preemption_goroutines_execution_total"
    assert _pysched_metric(runs, PYSCHED, goroutines, result="success") == 7
    assert _pysched_metric(runs, PYSCHED, goroutines, result="error") == 0


def test_a_preemptor_waiting_for_its_victims_skips_deletions_that_cannot_help(runs: Runs) -> None:
    """too-small-elsewhere: G's deletion (too little room on node2) and B's (A still holds
    node1) cannot help C; kube-pysched's NodeResourcesFit hint answers QueueSkip for them where
    kube-scheduler's answers Queue, and the records above are still the same."""
    runs.get(PYSCHED, "too-small-elsewhere")
    skipped = _pysched_metric(
        runs,
        PYSCHED,
        "scheduler_queueing_hint_execution_duration_seconds_count",
        plugin="NodeResourcesFit",
        event="AssignedPodDelete",
        hint="QueueSkip",
    )
    assert skipped >= 1


def test_inline_preemption_with_async_gate_off(runs: Runs) -> None:
    """SchedulerAsyncPreemption=false: the calls are made in the scheduling cycle, no goroutine."""
    r = runs.get(PYSCHED_SYNC, "example1")
    assert r["placements"]["c"] == "node1"
    preemptions = _pysched_metric(runs, PYSCHED_SYNC, "scheduler_preemption_victims_count")
    victims = _pysched_metric(runs, PYSCHED_SYNC, "scheduler_preemption_victims_sum")
    # C chooses A and B; each is evicted once. A second preemption follows one whose calls
    # failed (a transient API error on a loaded machine: C is retried without a nomination), or
    # a retry that no longer sees C's nomination (cleared by an attempt that found no candidate);
    # it chooses A and B again and, as kube-scheduler's prepareCandidate, makes no call for a
    # victim already terminating. Never a second eviction.
    lines = runs.logs[PYSCHED_SYNC]
    failed = [e for e in lines if e.get("event") == "PostFilter failed"]
    report = [e for e in lines if "preempt" in str(e.get("event", "")) or e in failed]
    evicted = Counter(
        e["victim"].rsplit("/", 1)[1]
        for e in lines
        if e.get("event") == "preemptor pod preempted victim pod"
    )
    assert evicted == {"a": 1, "b": 1}, report
    assert preemptions >= 1 + len(failed), report
    assert victims == 2 * preemptions, report
    # As kube-scheduler, the family is only registered with SchedulerAsyncPreemption on.
    assert "scheduler_preemption_goroutines_execution_total" not in runs.metrics[PYSCHED_SYNC]


# --- kube-pysched alone ---------------------------------------------------------------------


def test_async_preemption_does_not_hold_up_other_pods(
    cluster: Cluster,
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    priority_classes: dict[int, str],
    pysched: Factory,
) -> None:
    name = unique("pysched")
    sched = pysched(profile_config(name))
    with sc.scenario_env(core_v1, api_client, name, priority_classes, "async") as env:
        r = sc.async_preemption(env, others=40)
    victims = [f"low-{i}" for i in range(4)]
    assert r["nominated"] == {"high": ["full", None]}
    _victims_marked(r, victims, "high", "full")
    assert r["others_bound_on"] == ["free"]
    assert r["victims_terminating_when_others_bound"] == victims
    assert r["others_bound_before_first_victim_gone"] is True
    assert r["placements"]["high"] == "full"
    text = sched.metrics()
    labels = {"result": "success"}
    assert metric_value(text, "scheduler_preemption_goroutines_execution_total", labels) == 1
    assert metric_value(text, "scheduler_preemption_victims_sum") == 4


def test_failed_preemption_reverts_nomination_and_retries(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    priority_classes: dict[int, str],
    pysched: Factory,
) -> None:
    name = unique("pysched")
    sched = pysched(profile_config(name))

    def metrics() -> dict[str, float]:
        text = sched.metrics()
        errors = {"result": "error"}
        attempts = {"result": "unschedulable", "profile": name}
        return {
            "errors": metric_value(text, "scheduler_preemption_goroutines_execution_total", errors)
            or 0.0,
            "attempts": metric_value(text, "scheduler_schedule_attempts_total", attempts) or 0.0,
        }

    with sc.scenario_env(core_v1, api_client, name, priority_classes, "fail") as env:
        r = sc.failed_preemption(env, metrics)
    assert r["errors"] >= 1
    assert r["attempts"] >= 2
    assert r["nominations_while_denied"][:2] == ["node1", None]  # set, then reverted
    # The status patch went through before the DELETE was denied; the pod was not deleted.
    assert r["guarded_while_denied"] == {"exists": True, "deleting": False}
    assert r["disruption"]["guarded"] == VICTIM_CONDITION
    assert r["placements"] == {"guarded": "deleted", "p": "node1"}
