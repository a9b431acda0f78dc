"""kube-pysched's alerting rules, each with its runbook anchor and its promtool unit tests.

One source for the plain rules file (`deploy/prometheus/`), the chart's PrometheusRule
(`charts/kube-pysched/files/prometheus/`, read by `templates/prometheusrule.yaml`) and the
promtool test file. Every alert has

* `expr`: what fires (with its threshold),
* `signal`: the same query without the threshold comparison. `e2e/test_dashboards.py` requires
  it to return data from a real Prometheus scraping kube-pysched (so a renamed metric or label
  is caught), and requires the rule itself to be loaded and evaluated without error,
* `tests`: promtool `alert_rule_test`s (input series, evaluation time, the alerts expected).

Selectors use `job="kube-pysched"`: kube-scheduler exports the same family names, so every
expression must name the job (the chart's ServiceMonitor sets the job label to
`app.kubernetes.io/name`, i.e. kube-pysched; a hand-written scrape job must be called so).
Aggregations keep every label but `instance`/`pod`, so namespace/cluster labels added by the
scrape survive and several installations alert separately.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

JOB = 'job="kube-pysched"'
RUNBOOKS = "docs/operations.md"  # runbook_url = RUNBOOKS#<alert name in lower case>
GROUP = "kube-pysched"
_PER_SCHEDULER = "without (instance, pod)"


@dataclass(frozen=True)
class Case:
    """One promtool alert_rule_test: series (selector -> promtool values), the time the rule is
    evaluated at, and the label sets of the alerts expected to fire then (none: silent)."""

    name: str
    series: dict[str, str]
    eval_time: str
    fires: list[dict[str, str]] = field(default_factory=list)
    interval: str = "1m"


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    signal: str
    for_: str
    severity: str
    summary: str
    description: str
    tests: list[Case]

    @property
    def runbook_url(self) -> str:
        return f"{RUNBOOKS}#{self.name.lower()}"

    def rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ != "0m":
            rule["for"] = self.for_
        rule["labels"] = {"severity": self.severity}
        rule["annotations"] = {
            "summary": self.summary,
            "description": self.description,
            "runbook_url": self.runbook_url,
        }
        return rule


def _sli_buckets(instance: str, slow: bool) -> dict[str, str]:
    """SLI histogram buckets of one replica: 10 pods/min, all under 20.48s or all in
    (40.96s, 81.92s]."""
    sel = (
        "scheduler_pod_scheduling_sli_duration_seconds_bucket"
        f'{{{JOB}, instance="{instance}", attempts="1", le="%s"}}'
    )
    fast_count = "0+0x40" if slow else "0+10x40"
    return {
        sel % "20.48": fast_count,
        sel % "40.96": fast_count,
        sel % "81.92": "0+10x40",
        sel % "+Inf": "0+10x40",
    }


ALERTS: list[Alert] = [
    Alert(
        name="KubePyschedDown",
        expr=f"absent(up{{{JOB}}} == 1)",
        signal=f"up{{{JOB}}}",
        for_="15m",
        severity="critical",
        summary="kube-pysched has disappeared from Prometheus target discovery.",
        description=(
            "No kube-pysched target has been up for 15 minutes: pods asking for "
            "spec.schedulerName kube-pysched are not being scheduled."
        ),
        tests=[
            Case(
                "target down",
                {f'up{{{JOB}, instance="a"}}': "0x30"},
                "16m",
                [{"severity": "critical"}],
            ),
            Case("target up", {f'up{{{JOB}, instance="a"}}': "1x30"}, "16m"),
            Case(
                "one replica down, one up",
                {f'up{{{JOB}, instance="a"}}': "0x30", f'up{{{JOB}, instance="b"}}': "1x30"},
                "16m",
            ),
            Case(
                "target missing",
                {'up{job="kube-scheduler", instance="a"}': "1x30"},
                "16m",
                [{"severity": "critical"}],
            ),
            Case("down for less than 15m", {f'up{{{JOB}, instance="a"}}': "0x30"}, "10m"),
        ],
    ),
    Alert(
        name="KubePyschedNoLeader",
        expr=f"max {_PER_SCHEDULER} (leader_election_master_status{{{JOB}}}) == 0",
        signal=f"max {_PER_SCHEDULER} (leader_election_master_status{{{JOB}}})",
        for_="5m",
        severity="critical",
        summary="No kube-pysched replica holds the lease {{ $labels.name }}.",
        description=(
            "Every kube-pysched replica of lease {{ $labels.name }} has been a standby for "
            "5 minutes: nothing schedules its pods."
        ),
        tests=[
            Case(
                "two standbys",
                {
                    f'leader_election_master_status{{{JOB}, instance="a", name="kube-pysched"}}': (
                        "0x10"
                    ),
                    f'leader_election_master_status{{{JOB}, instance="b", name="kube-pysched"}}': (
                        "0x10"
                    ),
                },
                "6m",
                [{"job": "kube-pysched", "name": "kube-pysched", "severity": "critical"}],
            ),
            Case(
                "a leader and a standby",
                {
                    f'leader_election_master_status{{{JOB}, instance="a", name="kube-pysched"}}': (
                        "1x10"
                    ),
                    f'leader_election_master_status{{{JOB}, instance="b", name="kube-pysched"}}': (
                        "0x10"
                    ),
                },
                "6m",
            ),
            Case(
                "hand-over within the window",
                {
                    f'leader_election_master_status{{{JOB}, instance="a", name="kube-pysched"}}': (
                        "1 1 0 0 0 0 0 0 0 0"
                    ),
                    f'leader_election_master_status{{{JOB}, instance="b", name="kube-pysched"}}': (
                        "0 0 0 0 1 1 1 1 1 1"
                    ),
                },
                "6m",
            ),
        ],
    ),
    Alert(
        name="KubePyschedPendingPodsGrowing",
        expr=(
            f'sum without (instance, pod, queue) (scheduler_pending_pods{{{JOB}, queue!="gated"}})'
            " > 0\nand\n"
            "sum without (instance, pod, queue) "
            f'(delta(scheduler_pending_pods{{{JOB}, queue!="gated"}}[15m])) > 0'
        ),
        signal=(
            f'sum without (instance, pod, queue) (scheduler_pending_pods{{{JOB}, queue!="gated"}})'
        ),
        for_="15m",
        severity="warning",
        summary="kube-pysched's pending pods have kept growing for 30 minutes.",
        description=(
            "The number of pods waiting in kube-pysched's active, backoff and unschedulable "
            "queues has grown over every 15-minute window for 15 minutes: pods arrive faster "
            "than they are scheduled, or keep failing."
        ),
        tests=[
            Case(
                "growing",
                {
                    f'scheduler_pending_pods{{{JOB}, instance="a", queue="active"}}': "0+2x60",
                    f'scheduler_pending_pods{{{JOB}, instance="a", queue="unschedulable"}}': (
                        "0+1x60"
                    ),
                },
                "35m",
                [{"job": "kube-pysched", "severity": "warning"}],
            ),
            Case(
                "large but steady",
                {f'scheduler_pending_pods{{{JOB}, instance="a", queue="active"}}': "50x60"},
                "35m",
            ),
            Case(
                "gated pods growing",
                {f'scheduler_pending_pods{{{JOB}, instance="a", queue="gated"}}': "0+2x60"},
                "35m",
            ),
            Case(
                "draining",
                {f'scheduler_pending_pods{{{JOB}, instance="a", queue="active"}}': "100-1x60"},
                "35m",
            ),
        ],
    ),
    Alert(
        name="KubePyschedSchedulingSLIHigh",
        expr=(
            "histogram_quantile(0.99, sum without (instance, pod, attempts) "
            f"(rate(scheduler_pod_scheduling_sli_duration_seconds_bucket{{{JOB}}}[5m])))"
            " > 30"
        ),
        signal=(
            "histogram_quantile(0.99, sum without (instance, pod, attempts) "
            f"(rate(scheduler_pod_scheduling_sli_duration_seconds_bucket{{{JOB}}}[5m])))"
        ),
        for_="15m",
        severity="warning",
        summary="99% of kube-pysched's pods wait more than 30s to be scheduled.",
        description=(
            "The 99th percentile of scheduler_pod_scheduling_sli_duration_seconds (queue entry "
            "to binding, retries included) has been above 30 seconds for 15 minutes."
        ),
        tests=[
            Case(
                "slow",
                _sli_buckets("a", slow=True),
                "25m",
                [{"job": "kube-pysched", "severity": "warning"}],
            ),
            Case("fast", _sli_buckets("a", slow=False), "25m"),
        ],
    ),
    Alert(
        name="KubePyschedUnschedulablePods",
        expr=f"max {_PER_SCHEDULER} (scheduler_unschedulable_pods{{{JOB}}}) > 0",
        signal=f"max {_PER_SCHEDULER} (scheduler_unschedulable_pods{{{JOB}}})",
        for_="30m",
        severity="warning",
        summary=(
            "Plugin {{ $labels.plugin }} has kept pods of profile {{ $labels.profile }} "
            "unschedulable for 30 minutes."
        ),
        description=(
            "kube-pysched has had pods rejected by {{ $labels.plugin }} (profile "
            "{{ $labels.profile }}) waiting in its unschedulable queue for 30 minutes."
        ),
        tests=[
            Case(
                "one plugin keeps rejecting",
                {
                    f'scheduler_unschedulable_pods{{{JOB}, instance="a", plugin="NodeResourcesFit",'
                    ' profile="kube-pysched"}': "3x40",
                    f'scheduler_unschedulable_pods{{{JOB}, instance="a", plugin="TaintToleration",'
                    ' profile="kube-pysched"}': "0x40",
                },
                "31m",
                [
                    {
                        "job": "kube-pysched",
                        "plugin": "NodeResourcesFit",
                        "profile": "kube-pysched",
                        "severity": "warning",
                    }
                ],
            ),
            Case(
                "resolved within 30 minutes",
                {
                    f'scheduler_unschedulable_pods{{{JOB}, instance="a", plugin="NodeResourcesFit",'
                    ' profile="kube-pysched"}': "3x20 0x20",
                },
                "31m",
            ),
        ],
    ),
    Alert(
        name="KubePyschedSchedulingErrors",
        expr=(
            f"sum {_PER_SCHEDULER} "
            f'(rate(scheduler_schedule_attempts_total{{{JOB}, result="error"}}[5m])) > 0'
        ),
        signal=(
            f"sum {_PER_SCHEDULER} "
            f'(rate(scheduler_schedule_attempts_total{{{JOB}, result="error"}}[5m]))'
        ),
        for_="10m",
        severity="warning",
        summary=(
            "kube-pysched keeps failing to schedule or bind pods of profile {{ $labels.profile }}."
        ),
        description=(
            'scheduler_schedule_attempts_total{result="error"} of profile {{ $labels.profile }} '
            "has grown in every 5-minute window for 10 minutes: binding or an API call of the "
            "scheduling cycle fails (not: pods that do not fit)."
        ),
        tests=[
            Case(
                "errors keep coming",
                {
                    f'scheduler_schedule_attempts_total{{{JOB}, instance="a", result="error",'
                    ' profile="kube-pysched"}': "0+1x30",
                    f'scheduler_schedule_attempts_total{{{JOB}, instance="a", result="scheduled",'
                    ' profile="kube-pysched"}': "0+100x30",
                },
                "20m",
                [
                    {
                        "job": "kube-pysched",
                        "profile": "kube-pysched",
                        "result": "error",
                        "severity": "warning",
                    }
                ],
            ),
            Case(
                "one error long ago",
                {
                    f'scheduler_schedule_attempts_total{{{JOB}, instance="a", result="error",'
                    ' profile="kube-pysched"}': "0 1x30",
                },
                "20m",
            ),
            Case(
                "only unschedulable",
                {
                    f'scheduler_schedule_attempts_total{{{JOB}, instance="a",'
                    ' result="unschedulable", profile="kube-pysched"}': "0+5x30",
                },
                "20m",
            ),
        ],
    ),
    Alert(
        name="KubePyschedLeaderChurn",
        expr=f"sum {_PER_SCHEDULER} (changes(leader_election_master_status{{{JOB}}}[1h])) > 3",
        signal=f"sum {_PER_SCHEDULER} (changes(leader_election_master_status{{{JOB}}}[1h]))",
        for_="0m",
        severity="warning",
        summary="kube-pysched's lease {{ $labels.name }} changed hands often in the last hour.",
        description=(
            "leader_election_master_status of lease {{ $labels.name }} changed more than 3 "
            "times in one hour over all replicas: leaders lose their lease (API server latency, "
            "CPU starvation, restarts) and every hand-over pauses scheduling."
        ),
        tests=[
            Case(
                "flapping",
                {
                    f'leader_election_master_status{{{JOB}, instance="a", name="kube-pysched"}}': (
                        "1 0 1 0 1 0 1"
                    ),
                    f'leader_election_master_status{{{JOB}, instance="b", name="kube-pysched"}}': (
                        "0 1 0 1 0 1 0"
                    ),
                },
                "30m",
                [{"job": "kube-pysched", "name": "kube-pysched", "severity": "warning"}],
                interval="5m",
            ),
            Case(
                "one hand-over",
                {
                    f'leader_election_master_status{{{JOB}, instance="a", name="kube-pysched"}}': (
                        "1 1 1 0 0 0 0"
                    ),
                    f'leader_election_master_status{{{JOB}, instance="b", name="kube-pysched"}}': (
                        "0 0 0 1 1 1 1"
                    ),
                },
                "30m",
                interval="5m",
            ),
        ],
    ),
]


def rules() -> dict[str, Any]:
    """The rules file (`groups:`), as Prometheus and the PrometheusRule spec read it."""
    return {"groups": [{"name": GROUP, "rules": [alert.rule() for alert in ALERTS]}]}


_LABEL_REF = re.compile(r"\{\{ \$labels\.(\w+) \}\}")


def _expand(template: str, labels: dict[str, str]) -> str:
    """The annotation promtool expects: `{{ $labels.x }}` is all the annotations use."""
    return _LABEL_REF.sub(lambda m: labels.get(m.group(1), ""), template)


def unit_tests(rule_file: str) -> dict[str, Any]:
    """promtool's test file for `rule_file` (a path relative to the test file)."""
    tests: list[dict[str, Any]] = []
    for alert in ALERTS:
        for case in alert.tests:
            expected = [
                {
                    "exp_labels": {"alertname": alert.name, **labels},
                    "exp_annotations": {
                        "summary": _expand(alert.summary, labels),
                        "description": _expand(alert.description, labels),
                        "runbook_url": alert.runbook_url,
                    },
                }
                for labels in case.fires
            ]
            tests.append(
                {
                    "name": f"{alert.name}: {case.name}",
                    "interval": case.interval,
                    "input_series": [
                        {"series": series, "values": values}
                        for series, values in case.series.items()
                    ],
                    "alert_rule_test": [
                        {
                            "eval_time": case.eval_time,
                            "alertname": alert.name,
                            "exp_alerts": expected,
                        }
                    ],
                }
            )
    return {"rule_files": [rule_file], "evaluation_interval": "1m", "tests": tests}
