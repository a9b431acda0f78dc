"""The text views of an explanation, from the JSON the scheduler serves
(scheduler/explain/record.py `Attempt.to_json`): the summary in kube-scheduler's words, the
nodes grouped by Filter verdict (or one node, or every node), the score table of the best
nodes, and the PostFilter (preemption), Permit and binding story.

Works on the JSON alone, so the client needs nothing of the scheduler but this module.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

Json = Mapping[str, Any]

#: Node names shown per group without --wide.
EXAMPLES = 3
#: Score table rows without --wide.
TOP_NODES = 5


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = []
    for row in (header, *rows):
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=True)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def _when(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _reason(status: Json) -> str:
    return ", ".join(status.get("reasons") or []) or "(no reason given)"


def summary(record: Json) -> str:
    """The one line kube-scheduler would write: the PodScheduled=False condition's message,
    or the Scheduled event's for a pod that was bound."""
    pod = record["pod"]
    outcome = record["outcome"]
    if outcome == "Scheduled":
        node = record["selectedNode"]
        return f"Successfully assigned {pod['namespace']}/{pod['name']} to {node}"
    if record.get("message"):
        return str(record["message"])
    if outcome == "WaitingOnPermit":
        waits = ", ".join(sorted(record.get("permit", {}).get("waitingFor", {})))
        return f"assumed on {record.get('selectedNode', '')}, waiting on Permit of {waits}"
    if outcome == "Binding":
        return f"assumed on {record.get('selectedNode', '')}, binding"
    return str(outcome)


def groups(record: Json) -> list[tuple[Json, list[str]]]:
    """Each Filter verdict some node has, with its nodes, most nodes first."""
    verdicts = record.get("filter")
    if not verdicts:
        return []
    statuses = verdicts["statuses"]
    by_status: dict[int, list[str]] = {}
    for node, index in verdicts["nodes"].items():
        by_status.setdefault(int(index), []).append(node)
    ordered = sorted(by_status.items(), key=lambda pair: (-len(pair[1]), pair[0]))
    return [(statuses[i], sorted(nodes)) for i, nodes in ordered]


def render(record: Json, *, node: str | None = None, wide: bool = False) -> str:
    """The text view; `node` narrows the Filter and Score parts to one node, `wide` lists
    every node (Filter) and every kept node (Score)."""
    pod = record["pod"]
    lines = [
        f"Pod:       {pod['namespace']}/{pod['name']}",
        f"Profile:   {record['profile']}",
        f"Attempted: {_when(float(record['time']))}",
        f"Outcome:   {record['outcome']}",
        f"Summary:   {summary(record)}",
    ]
    lines += _pre_filter(record)
    lines += _filter(record, node, wide)
    lines += _scores(record, node, wide)
    lines += _story(record)
    return "\n".join(lines) + "\n"


def _pre_filter(record: Json) -> list[str]:
    pre = record.get("preFilter") or {}
    out = []
    if "rejection" in pre:
        status = pre["rejection"]
        out += ["", f"PreFilter: rejected by {status['plugin'] or '?'}: {_reason(status)}"]
    if "narrowedTo" in pre:
        plugins = " ".join(pre.get("plugins") or [])
        out += ["", f"PreFilter: {plugins} narrowed the nodes to {pre['narrowedTo']}"]
    first = record.get("triedFirst")
    if first:
        verdict = "fit" if first["fit"] else "did not fit"
        out += ["", f"Tried first: the {first['as']} {first['node']}, which {verdict}"]
    return out


def _filter(record: Json, node: str | None, wide: bool) -> list[str]:
    found = groups(record)
    if not found:
        first = record.get("triedFirst") or {}
        if first.get("fit"):
            return []  # the node tried first was the only one filtered: said above
        if record.get("nodes") and "feasibleNodes" in record and record.get("selectedNode"):
            return [
                "",
                f"Filter: {record['feasibleNodes']} feasible nodes found ({record['nodes']} in "
                "the cluster; the search stops after percentageOfNodesToScore feasible nodes)",
            ]
        return []
    if node is not None:
        index = record["filter"]["nodes"].get(node)
        if index is None:
            return ["", f"Node {node}: not in the scheduler's snapshot at this attempt"]
        status = record["filter"]["statuses"][int(index)]
        if status["code"] == "Success":
            return ["", f"Node {node}: passed Filter"]
        plugin = status["plugin"] or "?"
        return ["", f"Node {node}: rejected by {plugin} ({status['code']}): {_reason(status)}"]
    total = sum(len(nodes) for _, nodes in found)
    out = ["", f"Filter ({total} nodes, grouped by verdict):"]
    rows = []
    for status, nodes in found:
        shown = nodes if wide else nodes[:EXAMPLES]
        more = "" if len(shown) == len(nodes) else f", ... (+{len(nodes) - len(shown)})"
        plugin = status["plugin"] or ("-" if status["code"] == "Success" else "?")
        reason = "passed" if status["code"] == "Success" else _reason(status)
        rows.append([str(len(nodes)), plugin, status["code"], reason, ", ".join(shown) + more])
    out += _table(["NODES", "PLUGIN", "CODE", "REASON", "NODE NAMES"], rows)
    return out


def _scores(record: Json, node: str | None, wide: bool) -> list[str]:
    score = record.get("score")
    if not score:
        return []
    kept = score["nodes"]
    if node is not None:
        kept = [row for row in kept if row["node"] == node]
        if not kept:
            return ["", f"Node {node}: not among the best scored nodes kept"]
    elif not wide:
        kept = kept[:TOP_NODES]
    plugins = list(score["weights"])
    selected = record.get("selectedNode", "")
    out = [
        "",
        f"Score ({len(kept)} best of {score['scoredNodes']} scored nodes; "
        f"weighted = normalised x weight, raw/normalised in parentheses):",
    ]
    header = ["NODE", "TOTAL", *(f"{p} (x{score['weights'][p]})" for p in plugins)]
    rows = []
    for row in kept:
        mark = " *" if row["node"] == selected else ""
        cells = [f"{row['weighted'][p]} ({row['raw'][p]}/{row['normalized'][p]})" for p in plugins]
        rows.append([row["node"] + mark, str(row["total"]), *cells])
    out += _table(header, rows)
    if selected:
        out.append(f"  * selected: {selected}")
    if score.get("bestTotalNodes", 0) > 1:
        tied = ", ".join(score.get("tiedNodes") or [])
        out.append(
            f"  {score['bestTotalNodes']} nodes tied for the best total, picked at random: {tied}"
        )
    return out


def _story(record: Json) -> list[str]:
    out = []
    post = record.get("postFilter")
    if post:
        nominated = post.get("nominatedNode")
        message = str(post.get("message") or "(no message)").removeprefix("preemption: ")
        out += ["", f"Preemption: {message}"]
        if nominated:
            out.append(f"  nominated node: {nominated} (the pod waits there for its victims)")
        victims = post.get("victims") or []
        if victims:
            out.append(f"  victims ({len(victims)}): {', '.join(victims)}")
    earlier = record.get("earlierPreemption")
    if earlier:
        victims = ", ".join(earlier.get("victims") or []) or "none left to evict"
        out += [
            "",
            f"Earlier preemption ({_when(float(earlier['time']))}): nominated "
            f"{earlier['nominatedNode']}, victims: {victims}",
        ]
    permit = record.get("permit")
    if permit:
        waits = ", ".join(f"{p} (up to {t:g}s)" for p, t in sorted(permit["waitingFor"].items()))
        out += ["", f"Permit: waiting on {waits}"]
    if record.get("bindingError"):
        out += ["", f"Binding failed: {record['bindingError']}"]
    return out
