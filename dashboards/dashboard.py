"""kube-pysched's Grafana dashboard, built with Grafana's grafana-foundation-sdk.

Every query selects `job=~"$job", instance=~"$instance"`: kube-scheduler exports the same
family names, so a dashboard without the job filter would mix both schedulers. `$job` lists
the jobs that export `kube_pysched_events_dropped_total`, a family only kube-pysched has.
"""

from __future__ import annotations

import json
import re
from typing import Any

from grafana_foundation_sdk.builders import common as common_builder
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

UID = "kube-pysched"
TITLE = "kube-pysched"
SEL = 'job=~"$job", instance=~"$instance"'
RATE = "$__rate_interval"
DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
#: The metric whose job labels make the $job list (kube-pysched's own family).
JOB_METRIC = "kube_pysched_events_dropped_total"


def _query(expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).range()


def _quantiles(metric: str, by: str, quantiles: tuple[float, ...]) -> list[tuple[str, str]]:
    """(expr, legend) per quantile of a histogram, aggregated over `by` (besides `le`)."""
    group = f"le, {by}" if by else "le"
    labels = [b for b in by.split(",") if b.strip()]
    out = []
    for q in quantiles:
        expr = f"histogram_quantile({q}, sum by ({group}) (rate({metric}_bucket{{{SEL}}}[{RATE}])))"
        legend = " ".join([f"p{round(q * 100)}", *(f"{{{{{b.strip()}}}}}" for b in labels)])
        out.append((expr, legend))
    return out


class _Panels:
    """Numbers panels in the order they are added (stable ids for links and tests)."""

    def __init__(self) -> None:
        self.next_id = 1

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def series(
        self,
        title: str,
        description: str,
        queries: list[tuple[str, str]],
        unit: str,
        *,
        width: int = 12,
        stacked: bool = False,
    ) -> timeseries.Panel:
        panel = (
            timeseries.Panel()
            .id(self._id())
            .title(title)
            .description(description)
            .datasource(DATASOURCE)
            .unit(unit)
            .min(0)
            .span(width)
            .height(8)
            .fill_opacity(10)
            .show_points(common.VisibilityMode.NEVER)
            .legend(
                common_builder.VizLegendOptions()
                .display_mode(common.LegendDisplayMode.TABLE)
                .placement(common.LegendPlacement.BOTTOM)
                .show_legend(True)
                .calcs(["mean", "max", "lastNotNull"])
            )
            .tooltip(
                common_builder.VizTooltipOptions()
                .mode(common.TooltipDisplayMode.MULTI)
                .sort(common.SortOrder.DESCENDING)
            )
        )
        if stacked:
            panel = panel.stacking(common_builder.StackingConfig().mode(common.StackingMode.NORMAL))
        for i, (expr, legend) in enumerate(queries):
            panel = panel.with_target(_query(expr, legend).ref_id(chr(ord("A") + i)))
        return panel

    def stat(self, title: str, description: str, expr: str, legend: str, unit: str) -> stat.Panel:
        return (
            stat.Panel()
            .id(self._id())
            .title(title)
            .description(description)
            .datasource(DATASOURCE)
            .unit(unit)
            .span(6)
            .height(4)
            .color_mode(common.BigValueColorMode.VALUE)
            .graph_mode(common.BigValueGraphMode.NONE)
            .text_mode(common.BigValueTextMode.AUTO)
            .reduce_options(common_builder.ReduceDataOptions().calcs(["lastNotNull"]))
            .with_target(_query(expr, legend).instant().ref_id("A"))
        )

    def row(self, title: str) -> dash.Row:
        return dash.Row(title).id(self._id())


def build() -> model.Dashboard:
    p = _Panels()
    d = (
        dash.Dashboard(TITLE)
        .uid(UID)
        .description(
            "kube-pysched (a secondary Kubernetes scheduler in Python): throughput, queues, "
            "latency, plugins, preemption, API client, leader election and process."
        )
        .tags(["kube-pysched", "kubernetes", "scheduler"])
        .editable()
        .tooltip(model.DashboardCursorSync.CROSSHAIR)
        .time("now-1h", "now")
        .refresh("30s")
        .timezone("browser")
        .with_variable(
            dash.DatasourceVariable("datasource").label("Data source").type("prometheus")
        )
        .with_variable(
            dash.QueryVariable("job")
            .label("Job")
            .datasource(DATASOURCE)
            .query(f"label_values({JOB_METRIC}, job)")
            .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(model.VariableSort.ALPHABETICAL_ASC)
        )
        .with_variable(
            dash.QueryVariable("instance")
            .label("Instance")
            .datasource(DATASOURCE)
            .query(f'label_values({JOB_METRIC}{{job=~"$job"}}, instance)')
            .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(model.VariableSort.ALPHABETICAL_ASC)
            .multi(True)
            .include_all(True)
            .all_value(".*")
        )
    )

    d = d.with_row(p.row("Overview"))
    d = d.with_panel(
        p.stat(
            "Scheduled pods/s",
            "Pods bound per second (scheduler_schedule_attempts_total, result=scheduled).",
            f'sum(rate(scheduler_schedule_attempts_total{{{SEL}, result="scheduled"}}[{RATE}]))',
            "scheduled",
            "ops",
        )
    )
    d = d.with_panel(
        p.stat(
            "Pending pods",
            "Pods in the active, backoff and unschedulable queues (scheduler_pending_pods; "
            "gated pods are not counted).",
            f'sum(scheduler_pending_pods{{{SEL}, queue!="gated"}})',
            "pending",
            "short",
        )
    )
    d = d.with_panel(
        p.stat(
            "Unschedulable pods",
            "Pods rejected by at least one plugin and waiting (scheduler_unschedulable_pods, "
            "summed over plugins: a pod rejected by two plugins counts twice).",
            f"sum(scheduler_unschedulable_pods{{{SEL}}})",
            "unschedulable",
            "short",
        )
    )
    d = d.with_panel(
        p.stat(
            "Leader",
            "The instance holding the lease (leader_election_master_status == 1); empty when "
            "no replica leads or leader election is off.",
            f"max by (instance, name) (leader_election_master_status{{{SEL}}}) == 1",
            "{{instance}}",
            "none",
        )
    )

    d = d.with_row(p.row("Scheduling"))
    d = d.with_panel(
        p.series(
            "Scheduling rate",
            "Pods bound per second, by profile.",
            [
                (
                    f"sum by (profile) (rate(scheduler_schedule_attempts_total"
                    f'{{{SEL}, result="scheduled"}}[{RATE}]))',
                    "{{profile}}",
                )
            ],
            "ops",
        )
    )
    d = d.with_panel(
        p.series(
            "Scheduling attempts by result",
            "Scheduling attempts per second: scheduled, unschedulable (no node fits) and error "
            "(binding or an API call failed).",
            [
                (
                    f"sum by (result) (rate(scheduler_schedule_attempts_total{{{SEL}}}[{RATE}]))",
                    "{{result}}",
                )
            ],
            "ops",
            stacked=True,
        )
    )
    d = d.with_panel(
        p.series(
            "Pod scheduling SLI latency",
            "Time from a pod's first entry into the queue to its binding, retries included "
            "(scheduler_pod_scheduling_sli_duration_seconds).",
            _quantiles("scheduler_pod_scheduling_sli_duration_seconds", "", (0.5, 0.9, 0.99)),
            "s",
        )
    )
    d = d.with_panel(
        p.series(
            "Scheduling attempt duration",
            "One scheduling attempt, from pop to binding or failure, by result "
            "(scheduler_scheduling_attempt_duration_seconds).",
            _quantiles("scheduler_scheduling_attempt_duration_seconds", "result", (0.5, 0.99)),
            "s",
        )
    )

    d = d.with_row(p.row("Queue"))
    d = d.with_panel(
        p.series(
            "Pending pods by queue",
            "scheduler_pending_pods: active (to be scheduled), backoff (waiting out a backoff), "
            "unschedulable (waiting for a cluster event), gated (scheduling gates).",
            [(f"sum by (queue) (scheduler_pending_pods{{{SEL}}})", "{{queue}}")],
            "short",
        )
    )
    d = d.with_panel(
        p.series(
            "Unschedulable pods by plugin",
            "scheduler_unschedulable_pods: pods waiting, by the plugin that rejected them.",
            [
                (
                    f"sum by (plugin, profile) (scheduler_unschedulable_pods{{{SEL}}})",
                    "{{plugin}} ({{profile}})",
                )
            ],
            "short",
        )
    )
    d = d.with_panel(
        p.series(
            "Queue moves by event",
            "Pods entering a queue per second, by the cluster event that moved them and the "
            "queue (scheduler_queue_incoming_pods_total).",
            [
                (
                    f"sum by (event, queue) (rate(scheduler_queue_incoming_pods_total"
                    f"{{{SEL}}}[{RATE}]))",
                    "{{event}} -> {{queue}}",
                )
            ],
            "ops",
            width=24,
        )
    )

    d = d.with_row(p.row("Framework"))
    d = d.with_panel(
        p.series(
            "Extension point latency (p99)",
            "99th percentile per extension point, all plugins of the point together "
            "(scheduler_framework_extension_point_duration_seconds).",
            _quantiles(
                "scheduler_framework_extension_point_duration_seconds",
                "extension_point",
                (0.99,),
            ),
            "s",
        )
    )
    d = d.with_panel(
        p.series(
            "Plugin latency (p99)",
            "99th percentile per plugin and extension point "
            "(scheduler_plugin_execution_duration_seconds; recorded for 10% of the cycles, "
            "as kube-scheduler does).",
            _quantiles(
                "scheduler_plugin_execution_duration_seconds", "plugin, extension_point", (0.99,)
            ),
            "s",
        )
    )

    d = d.with_row(p.row("Preemption"))
    d = d.with_panel(
        p.series(
            "Preemption attempts",
            "Preemption attempts per second (scheduler_preemption_attempts_total).",
            [
                (
                    f"sum(rate(scheduler_preemption_attempts_total{{{SEL}}}[{RATE}]))",
                    "attempts",
                )
            ],
            "ops",
        )
    )
    d = d.with_panel(
        p.series(
            "Preemption victims",
            "Pods evicted per second, and victims per preemption (scheduler_preemption_victims).",
            [
                (
                    f"sum(rate(scheduler_preemption_victims_sum{{{SEL}}}[{RATE}]))",
                    "victims/s",
                ),
                (
                    f"sum(rate(scheduler_preemption_victims_sum{{{SEL}}}[{RATE}])) / "
                    f"sum(rate(scheduler_preemption_victims_count{{{SEL}}}[{RATE}]))",
                    "victims per preemption",
                ),
            ],
            "short",
        )
    )

    d = d.with_row(p.row("API server"))
    d = d.with_panel(
        p.series(
            "API requests by code",
            "Requests to the API server per second, by method and status code "
            "(rest_client_requests_total).",
            [
                (
                    f"sum by (method, code) (rate(rest_client_requests_total{{{SEL}}}[{RATE}]))",
                    "{{method}} {{code}}",
                )
            ],
            "reqps",
        )
    )
    d = d.with_panel(
        p.series(
            "API request latency (p99)",
            "99th percentile request latency by verb (rest_client_request_duration_seconds).",
            _quantiles("rest_client_request_duration_seconds", "verb", (0.99,)),
            "s",
        )
    )

    d = d.with_row(p.row("Leader election and process"))
    d = d.with_panel(
        p.series(
            "Leader status",
            "leader_election_master_status per instance: 1 leads, 0 stands by. Flips are "
            "hand-overs.",
            [
                (
                    f"leader_election_master_status{{{SEL}}}",
                    "{{instance}} {{name}}",
                )
            ],
            "none",
            width=6,
        )
    )
    d = d.with_panel(
        p.series(
            "CPU",
            "CPU used by each kube-pysched process, in cores (process_cpu_seconds_total).",
            [(f"rate(process_cpu_seconds_total{{{SEL}}}[{RATE}])", "{{instance}}")],
            "cores",
            width=6,
        )
    )
    d = d.with_panel(
        p.series(
            "Memory",
            "Resident memory of each kube-pysched process (process_resident_memory_bytes).",
            [(f"process_resident_memory_bytes{{{SEL}}}", "{{instance}}")],
            "bytes",
            width=6,
        )
    )
    d = d.with_panel(
        p.series(
            "Garbage collection pauses",
            "Share of the time the interpreter's garbage collections held each process (every "
            "thread waits), by generation (kube_pysched_gc_pause_seconds; 2 is a full "
            "collection).",
            [
                (
                    f"sum by (instance, generation) "
                    f"(rate(kube_pysched_gc_pause_seconds_sum{{{SEL}}}[{RATE}]))",
                    "{{instance}} gen {{generation}}",
                )
            ],
            "percentunit",
            width=6,
        )
    )
    return d.build()


def to_json() -> str:
    """The dashboard as Grafana imports it (stable key order, trailing newline)."""
    data: Any = json.loads(json.dumps(build(), cls=JSONEncoder))
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def panel_queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expr) of every query of a dashboard's JSON, rows' panels included."""
    out: list[tuple[str, str]] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            for target in panel.get("targets") or []:
                if target.get("expr"):
                    out.append((str(panel.get("title", "")), str(target["expr"])))
            walk(panel.get("panels") or [])

    walk(board.get("panels") or [])
    return out


_LABEL_VALUES = re.compile(r"^label_values\((?P<selector>.+),\s*(?P<label>\w+)\)$")


def variable_queries(board: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(variable, series selector, label) of every `label_values(selector, label)` variable."""
    out = []
    for var in board.get("templating", {}).get("list", []):
        match = _LABEL_VALUES.match(str(var.get("query", ""))) if var["type"] == "query" else None
        if match:
            out.append((str(var["name"]), match["selector"], match["label"]))
    return out


def substitute(expr: str, variables: dict[str, str]) -> str:
    """Grafana's `$name` / `${name}` variables replaced (longest names first)."""
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", variables[name]).replace("$" + name, variables[name])
    return expr
