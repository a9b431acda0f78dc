"""The report as one self-contained HTML page: inline SVG charts and tables, no scripts, fonts
or styles from elsewhere, so it opens from a file, an artefact store or a mail attachment.

Per configuration: cpu and memory requested per node before and after (the nodes whose use
changed most, when there are many), the pods placed per node, the pending pods' reasons, the
pending pods and the preemptions; then the placements that differ between configurations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape

from scheduler.simulate.report import (
    ZONE_HEADER,
    ConfigReport,
    NodeUse,
    Report,
    device_rows,
    shape_text,
    what_if_lines,
    zone_rows,
)

#: Nodes drawn per utilisation chart (the ones whose use changed most).
CHART_NODES = 60
BAR_HEIGHT = 14
LABEL_WIDTH = 260
BAR_WIDTH = 420
BEFORE = "#b0b7c3"
AFTER = "#2f6fdf"
COUNT = "#d9822b"

STYLE = """
body { font-family: sans-serif; margin: 2em; color: #1d232b; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #d5d9e0; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f5; }
svg text { font-size: 11px; font-family: sans-serif; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; }
.note { color: #5a6270; font-size: 0.9em; }
"""


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _bars(
    title: str, rows: Sequence[tuple[str, Sequence[float]]], colors: Sequence[str], unit: str
) -> str:
    """Horizontal bars, one row per label, one bar per series (drawn over each other, the
    later series thinner): an SVG with a <rect> per non-empty bar."""
    top = max((max(values) for _, values in rows if values), default=0.0)
    if top <= 0:  # nothing to draw: say so rather than draw an empty chart
        return f'<h3>{escape(title)}</h3><p class="note">None on these nodes.</p>'
    # Percentages against the whole bar (100 %), so a node at 5 % reads as nearly empty;
    # counts against the largest.
    full = max(top, 100.0) if unit == "%" else top

    height = len(rows) * (BAR_HEIGHT + 6) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
        f'width="{LABEL_WIDTH + BAR_WIDTH + 80}" height="{height}">'
    ]
    for i, (label, values) in enumerate(rows):
        y = 5 + i * (BAR_HEIGHT + 6)
        parts.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{y + BAR_HEIGHT - 3}" '
            f'text-anchor="end">{escape(label)}</text>'
        )
        for j, (value, color) in enumerate(zip(values, colors, strict=False)):
            inset = j * 3
            width = max(1.0, BAR_WIDTH * value / full) if value > 0 else 0.0
            if width:
                parts.append(
                    f'<rect x="{LABEL_WIDTH}" y="{y + inset}" width="{width:.1f}" '
                    f'height="{BAR_HEIGHT - 2 * inset}" fill="{color}"/>'
                )
        shown = values[-1] if values else 0
        parts.append(
            f'<text x="{LABEL_WIDTH + BAR_WIDTH + 6}" y="{y + BAR_HEIGHT - 3}">'
            f"{shown:.1f}{escape(unit)}</text>"
            if unit == "%"
            else f'<text x="{LABEL_WIDTH + BAR_WIDTH + 6}" y="{y + BAR_HEIGHT - 3}">'
            f"{shown:.0f}</text>"
        )
    parts.append("</svg>")
    return f"<h3>{escape(title)}</h3>" + "".join(parts)


def _pct(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def _use_charts(nodes: Sequence[NodeUse]) -> str:
    changed = sorted(
        nodes,
        key=lambda n: (
            -abs(_pct(n.cpu_after - n.cpu_before, n.cpu_allocatable))
            - abs(_pct(n.memory_after - n.memory_before, n.memory_allocatable)),
            n.node,
        ),
    )[:CHART_NODES]
    shown = sorted(changed, key=lambda n: n.node)
    note = (
        f'<p class="note">The {len(shown)} nodes whose use changed most, of {len(nodes)}.</p>'
        if len(nodes) > len(shown)
        else ""
    )
    legend = (
        f'<p class="legend"><span style="background:{BEFORE}"></span>before'
        f'<span style="background:{AFTER}"></span>after</p>'
    )
    cpu = [
        (n.node, (_pct(n.cpu_before, n.cpu_allocatable), _pct(n.cpu_after, n.cpu_allocatable)))
        for n in shown
    ]
    memory = [
        (
            n.node,
            (
                _pct(n.memory_before, n.memory_allocatable),
                _pct(n.memory_after, n.memory_allocatable),
            ),
        )
        for n in shown
    ]
    zones = _table(ZONE_HEADER, zone_rows(nodes))
    return (
        legend
        + note
        + _bars("cpu requested / allocatable", cpu, (BEFORE, AFTER), "%")
        + _bars("memory requested / allocatable", memory, (BEFORE, AFTER), "%")
        + "<h3>Per zone</h3>"
        + zones
    )


def _config(cfg: ConfigReport, shape: dict[str, str]) -> str:
    out = [
        f"<h2>Configuration {escape(cfg.config)}</h2>",
        f"<p>{len(cfg.placed)} placed, {len(cfg.pending)} pending, "
        f"{len(cfg.preemptions)} preemptions; {cfg.cycles} scheduling cycles in "
        f"{cfg.seconds:.2f} s.</p>",
    ]
    if cfg.stopped_early:
        out.append('<p class="note">Stopped early: the bound on attempts was reached.</p>')
    if cfg.headroom is not None:
        h = cfg.headroom
        out.append(
            f"<h3>Room for more pods of {escape(shape_text(shape))}</h3>"
            + _table(
                ["", "Pods", "Nodes with room"],
                [("before", h.before, h.nodes_before), ("after", h.after, h.nodes_after)],
            )
        )
    if cfg.nodes:
        out.append(_use_charts(cfg.nodes))
    if cfg.placed_per_node:
        rows = [(node, (float(n),)) for node, n in sorted(cfg.placed_per_node.items())]
        out.append(_bars("pods placed per node", rows, (AFTER,), ""))
    if cfg.pending:
        reasons: Counter[str] = Counter()
        for pending in cfg.pending:
            reasons.update(pending.reasons.keys())
        rows = [(reason, (float(n),)) for reason, n in sorted(reasons.items())]
        if rows:
            out.append(_bars("pending pods per reason", rows, (COUNT,), ""))
        out.append(
            "<h3>Pending</h3>" + _table(["Pod", "Why"], [(p.pod, p.message) for p in cfg.pending])
        )
    if cfg.devices:
        out.append(
            "<h3>Devices allocated</h3>"
            + _table(["Pod", "Claim", "Request", "Driver/pool/device"], device_rows(cfg))
        )
    if cfg.groups:
        out.append(
            "<h3>Pod groups</h3>"
            + _table(
                ["Pod group", "minMember", "Placed", "State", "Why"],
                [
                    (g.group, g.min_member, f"{g.placed}/{g.members}", g.state, g.message)
                    for g in cfg.groups
                ],
            )
        )
    if cfg.preemptions:
        out.append(
            "<h3>Preemptions</h3>"
            + _table(
                ["Preemptor", "Node", "Victims"],
                [(p.preemptor, p.node, ", ".join(p.victims)) for p in cfg.preemptions],
            )
        )
    out.append(
        "<h3>Placed</h3>"
        + _table(
            ["Pod", "Node", "Nodes sharing the best score"],
            [(pod, node, cfg.tied.get(pod, "")) for pod, node in cfg.placed.items()],
        )
    )
    return "".join(out)


def render_html(report: Report) -> str:
    header = [
        "<h1>kube-pysched simulation</h1>",
        f"<p>Snapshot {escape(', '.join(report.snapshot))}: {report.nodes} nodes, "
        f"{report.existing_pods} pods; seed {report.seed}.</p>",
    ]
    header += [f"<p>{escape(line)}</p>" for line in what_if_lines(report)]
    body = header + [_config(cfg, report.shape) for cfg in report.configs]
    if report.differences:
        names = [cfg.config for cfg in report.configs]
        body.append(
            "<h2>Placements that differ</h2>"
            + _table(
                ["Pod", *names],
                [(d.pod, *(d.nodes[n] or "(pending)" for n in names)) for d in report.differences],
            )
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>kube-pysched simulation</title>"
        f"<style>{STYLE}</style></head><body>" + "".join(body) + "</body></html>\n"
    )
