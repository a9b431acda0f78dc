"""The generated dashboard and alerting rules: up to date, complete, selecting kube-pysched only.

The queries themselves are run against a real Prometheus in e2e/test_dashboards.py and the
rules through promtool in e2e/test_alert_rules.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from dashboards import alerts, dashboard, outputs

ROOT = outputs.REPO_ROOT
OPERATIONS = ROOT / "docs" / "operations.md"
TEMPLATES = ROOT / "charts" / "kube-pysched" / "templates"

#: What the dashboard must show (docs/operations.md "Dashboards and alerts").
REQUIRED_METRICS = (
    "scheduler_schedule_attempts_total",
    "scheduler_pending_pods",
    "scheduler_unschedulable_pods",
    "scheduler_pod_scheduling_sli_duration_seconds_bucket",
    "scheduler_scheduling_attempt_duration_seconds_bucket",
    "scheduler_framework_extension_point_duration_seconds_bucket",
    "scheduler_plugin_execution_duration_seconds_bucket",
    "scheduler_preemption_attempts_total",
    "scheduler_preemption_victims_sum",
    "scheduler_queue_incoming_pods_total",
    "rest_client_requests_total",
    "rest_client_request_duration_seconds_bucket",
    "leader_election_master_status",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "kube_pysched_gc_pause_seconds_sum",
)

_SELECTOR = re.compile(r"([a-z_:][a-z0-9_:]*)\{([^}]*)\}")


def _board() -> dict[str, object]:
    board: dict[str, object] = json.loads((ROOT / outputs.DEPLOY_DASHBOARD).read_text())
    return board


def test_checked_in_files_are_the_generators_output() -> None:
    stale = outputs.stale()
    assert not stale, f"out of date (run `python -m dashboards`): {[str(p) for p in stale]}"
    # The chart and deploy/ carry the same bytes.
    assert (ROOT / outputs.CHART_DASHBOARD).read_bytes() == (
        ROOT / outputs.DEPLOY_DASHBOARD
    ).read_bytes()
    assert (ROOT / outputs.CHART_RULES).read_bytes() == (ROOT / outputs.DEPLOY_RULES).read_bytes()


def test_every_query_selects_kube_pysched_only() -> None:
    queries = dashboard.panel_queries(_board())
    assert queries
    for title, expr in queries:
        selectors = _SELECTOR.findall(expr)
        assert selectors, (title, expr)
        for metric, matchers in selectors:
            assert 'job=~"$job"' in matchers and 'instance=~"$instance"' in matchers, (
                title,
                metric,
            )
    for alert in alerts.ALERTS:
        for expr in (alert.expr, alert.signal):
            selectors = _SELECTOR.findall(expr)
            assert selectors and all(alerts.JOB in m for _, m in selectors), (alert.name, expr)
        assert alert.expr.startswith(alert.signal) or alert.name == "KubePyschedDown", alert.name


def test_dashboard_shows_the_required_metrics() -> None:
    exprs = " ".join(expr for _, expr in dashboard.panel_queries(_board()))
    missing = [m for m in REQUIRED_METRICS if f"{m}{{" not in exprs]
    assert not missing


def test_dashboard_structure() -> None:
    board = _board()
    panels = board["panels"]
    assert isinstance(panels, list)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert panel["description"], panel["title"]
    variables = {v["name"]: v for v in board["templating"]["list"]}  # type: ignore[index]
    assert set(variables) == {"datasource", "job", "instance"}
    assert [v for v, _, _ in dashboard.variable_queries(board)] == ["job", "instance"]


def test_every_alert_has_a_runbook_entry() -> None:
    text = OPERATIONS.read_text()
    assert "\n## Runbooks\n" in text
    runbooks = text.split("\n## Runbooks\n", 1)[1].split("\n## ", 1)[0]
    headings = {h.strip().lower() for h in re.findall(r"^### (.+)$", runbooks, re.M)}
    for alert in alerts.ALERTS:
        anchor = alert.runbook_url.split("#", 1)[1]
        assert alert.runbook_url.startswith("docs/operations.md#")
        assert anchor in headings, f"no '### {alert.name}' under ## Runbooks"
    assert len({a.name for a in alerts.ALERTS}) == len(alerts.ALERTS)


def test_rules_file_shape() -> None:
    doc = yaml.safe_load((ROOT / outputs.DEPLOY_RULES).read_text())
    rules = doc["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == [a.name for a in alerts.ALERTS]
    for rule in rules:
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}


def test_chart_templates_use_the_generated_files() -> None:
    board = (TEMPLATES / "grafana-dashboard.yaml").read_text()
    assert 'grafana_dashboard: "1"' in board
    assert f'.Files.Get "{Path(*outputs.CHART_DASHBOARD.parts[2:])}"' in board
    rule = (TEMPLATES / "prometheusrule.yaml").read_text()
    assert f'.Files.Get "{Path(*outputs.CHART_RULES.parts[2:])}"' in rule
    assert '.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/PrometheusRule"' in rule
