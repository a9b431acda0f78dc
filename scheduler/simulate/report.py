"""The simulation report: per configuration, the pods placed, the pods left pending with the
reasons a FailedScheduling event would give, the preemptions and their victims, and the pods
whose placement differs between configurations.

`Report` is plain dataclasses, so `to_json` is `dataclasses.asdict`: a table (`render_table`)
and any other view (an HTML page) are built from the same object.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.json_types import Json


@dataclass
class PendingPod:
    """A pod no node took: the FailedScheduling message, word for word, and its reasons with
    how many nodes gave each (the counts the message aggregates)."""

    pod: str
    message: str
    reasons: dict[str, int] = field(default_factory=dict)


@dataclass
class Preemption:
    """A preemptor, the node it made room on, the pods it evicted there."""

    preemptor: str
    node: str
    victims: list[str]


@dataclass(frozen=True)
class AllocatedDevice:
    """One device DynamicResources allocated to one of a pod's ResourceClaims."""

    claim: str
    request: str
    driver: str
    pool: str
    device: str


@dataclass
class PodGroupOutcome:
    """A pod group after the run: `placed` when at least minMember of its members are bound
    (the group was placed whole), else `pending` with the group's message as the scheduler
    writes it (a v1beta1 PodGroup's PodGroupInitiallyScheduled condition; for a
    scheduler-plugins PodGroup the members' shared FailedScheduling message; for members held
    before any attempt, the PreEnqueue message)."""

    group: str
    api: str
    min_member: int
    members: int
    placed: int
    state: str
    message: str = ""


@dataclass
class Headroom:
    """How many more pods of the report's shape fit, before and after the run (NodeResourcesFit's
    check per node: resources and pod count, cordoned nodes left out; scheduler/simulate/
    fragmentation.py), and on how many nodes at least one would."""

    before: int
    after: int
    nodes_before: int
    nodes_after: int


@dataclass
class NodeUse:
    """A node's requested cpu (millicores) and memory (bytes) before and after the run."""

    node: str
    zone: str
    cpu_allocatable: int
    cpu_before: int
    cpu_after: int
    memory_allocatable: int
    memory_before: int
    memory_after: int


@dataclass
class ConfigReport:
    """One configuration's run."""

    config: str
    placed: dict[str, str] = field(default_factory=dict)
    pending: list[PendingPod] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)
    #: Placed pods with ResourceClaims: the devices allocated to them.
    devices: dict[str, list[AllocatedDevice]] = field(default_factory=dict)
    #: Every pod group with members in the cluster, by "namespace/name".
    groups: list[PodGroupOutcome] = field(default_factory=list)
    #: Placed pods whose best score several nodes shared, and how many: the seed chose
    #: among them (a live scheduler may choose another).
    tied: dict[str, int] = field(default_factory=dict)
    #: Simulated pods per node, placed in this run.
    placed_per_node: dict[str, int] = field(default_factory=dict)
    #: Every node's use, before and after.
    nodes: list[NodeUse] = field(default_factory=list)
    #: More pods of the report's `shape` that would fit (None without a shape).
    headroom: Headroom | None = None
    #: Pods whose schedulerName no profile of this configuration has (another scheduler's).
    other_scheduler: list[str] = field(default_factory=list)
    cycles: int = 0
    seconds: float = 0.0
    #: True when the run hit its bound on scheduling attempts (pods may have been left).
    stopped_early: bool = False
    #: With --recreate-victims: preempted pod -> the pod its controller created in its place
    #: ("" when no controller recreates it).
    recreated_victims: dict[str, str] = field(default_factory=dict)

    @property
    def pods_per_second(self) -> float:
        return len(self.placed) / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Difference:
    """A pod placed differently by the configurations: its node in each ("" = pending)."""

    pod: str
    nodes: dict[str, str]


@dataclass
class Report:
    snapshot: list[str]
    seed: int
    nodes: int
    existing_pods: int
    added: list[str] = field(default_factory=list)
    drained: list[str] = field(default_factory=list)
    #: Pods a drain evicted and no controller recreates.
    lost: list[str] = field(default_factory=list)
    #: `--scale` targets: "NAMESPACE/KIND/NAME: FROM -> TO" (pods).
    scaled: list[str] = field(default_factory=list)
    #: The pods `--scale` deletes, in the order the controllers delete them.
    scaled_down: list[str] = field(default_factory=list)
    removed_nodes: list[str] = field(default_factory=list)
    added_nodes: list[str] = field(default_factory=list)
    #: Drain evictions a PodDisruptionBudget refused: pod -> the eviction API's message.
    blocked: dict[str, str] = field(default_factory=dict)
    #: The reference pod shape of the headroom figures (--shape, else the most common request
    #: among the added pods; empty: none).
    shape: dict[str, str] = field(default_factory=dict)
    configs: list[ConfigReport] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    def to_json(self) -> Json:
        out: Json = dataclasses.asdict(self)
        for cfg, raw in zip(self.configs, out["configs"], strict=True):
            raw["pods_per_second"] = round(cfg.pods_per_second, 1)
        return out


def reason_counts(attempt: Json | None) -> dict[str, int]:
    """Each reason of the attempt's per-node verdicts and how many nodes gave it, as
    FitError's message counts them (a PreFilter rejection counts for every node)."""
    if attempt is None:
        return {}
    counts: Counter[str] = Counter()
    rejection = (attempt.get("preFilter") or {}).get("rejection")
    if rejection is not None:
        for reason in rejection.get("reasons") or []:
            counts[reason] += int(attempt.get("nodes") or 0)
    verdicts = attempt.get("filter")
    if verdicts is not None:
        statuses = verdicts["statuses"]
        for group in verdicts["groups"]:
            for reason in statuses[group["status"]].get("reasons") or []:
                counts[reason] += group["nodes"]
    return dict(sorted(counts.items()))


#: The columns of `zone_rows`.
ZONE_HEADER = ("ZONE", "CPU BEFORE", "CPU AFTER", "MEMORY BEFORE", "MEMORY AFTER")


def zone_rows(nodes: Sequence[NodeUse]) -> list[tuple[str, ...]]:
    """The per-zone utilisation rows of every view (table, page): the zone ("(none)" for
    nodes without one), then cpu and memory requested over allocatable before and after, as
    percentages with one decimal."""
    return [(zone or "(none)", *(f"{v:.1f}%" for v in values)) for zone, *values in zone_use(nodes)]


def zone_use(nodes: Sequence[NodeUse]) -> list[tuple[str, float, float, float, float]]:
    """Per zone ("" for nodes without one): cpu and memory requested over allocatable, in
    percent, before and after."""
    zones: dict[str, list[int]] = {}
    for n in nodes:
        z = zones.setdefault(n.zone, [0] * 6)
        for i, v in enumerate(
            (
                n.cpu_allocatable,
                n.cpu_before,
                n.cpu_after,
                n.memory_allocatable,
                n.memory_before,
                n.memory_after,
            )
        ):
            z[i] += v

    def pct(part: int, whole: int) -> float:
        return 100.0 * part / whole if whole else 0.0

    return [
        (zone, pct(v[1], v[0]), pct(v[2], v[0]), pct(v[4], v[3]), pct(v[5], v[3]))
        for zone, v in sorted(zones.items())
    ]


def device_rows(cfg: ConfigReport) -> list[tuple[str, str, str, str]]:
    """Per allocated device: the pod, its claim, the request and driver/pool/device."""
    return [
        (pod, d.claim, d.request, f"{d.driver}/{d.pool}/{d.device}")
        for pod, devices in sorted(cfg.devices.items())
        for d in devices
    ]


def shape_text(shape: dict[str, str]) -> str:
    return ",".join(f"{name}={quantity}" for name, quantity in shape.items())


def differences(configs: Sequence[ConfigReport], pods: Sequence[str]) -> list[Difference]:
    if len(configs) < 2:
        return []
    out = []
    for pod in pods:
        nodes = {cfg.config: cfg.placed.get(pod, "") for cfg in configs}
        if len(set(nodes.values())) > 1:
            out.append(Difference(pod, nodes))
    return out


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ") -> list[str]:
    cells = [list(map(str, header)), *[list(map(str, row)) for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return [
        indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]


def what_if_lines(report: Report) -> list[str]:
    """The what-if's changes, one line each (the table's and the page's header)."""
    lines = [f"Added:    {len(report.added)} pods"] if report.added else []
    if report.drained:
        lines.append(f"Drained:  {', '.join(report.drained)}")
    if report.lost:
        lines.append(f"Evicted, not recreated (no controller): {', '.join(report.lost)}")
    lines += [f"Scaled:   {s}" for s in report.scaled]
    if report.scaled_down:
        lines.append(f"Scaled down, deleted: {', '.join(report.scaled_down)}")
    if report.removed_nodes:
        lines.append(f"Removed nodes: {', '.join(report.removed_nodes)}")
    if report.added_nodes:
        lines.append(f"Added nodes:   {', '.join(report.added_nodes)}")
    lines += [f"Eviction blocked: {pod}: {why}" for pod, why in sorted(report.blocked.items())]
    return lines


def render_table(report: Report) -> str:
    lines = [
        f"Snapshot: {', '.join(report.snapshot)} ({report.nodes} nodes, "
        f"{report.existing_pods} pods); seed {report.seed}",
    ]
    lines += what_if_lines(report)
    for cfg in report.configs:
        lines.append("")
        lines.append(
            f"Configuration {cfg.config}: {len(cfg.placed)} placed, {len(cfg.pending)} pending, "
            f"{len(cfg.preemptions)} preemptions ({cfg.cycles} cycles, {cfg.seconds:.2f} s)"
        )
        if cfg.stopped_early:
            lines.append("  stopped early: the bound on scheduling attempts was reached")
        if cfg.headroom is not None:
            h = cfg.headroom
            lines.append(
                f"  room for more pods of {shape_text(report.shape)}: {h.before} before "
                f"({h.nodes_before} nodes), {h.after} after ({h.nodes_after} nodes)"
            )
        if cfg.placed:
            lines += _table(
                ["POD", "NODE", "TIED"],
                [(pod, node, cfg.tied.get(pod, "")) for pod, node in sorted(cfg.placed.items())],
            )
        if cfg.placed_per_node:
            lines.append("")
            lines += _table(["NODE", "PLACED"], sorted(cfg.placed_per_node.items()))
        if cfg.nodes:
            lines.append("")
            lines += _table(ZONE_HEADER, zone_rows(cfg.nodes))
        if cfg.pending:
            lines.append("")
            lines += _table(["PENDING", "WHY"], [(p.pod, p.message) for p in cfg.pending])
        if cfg.devices:
            lines.append("")
            lines += _table(["POD", "CLAIM", "REQUEST", "DEVICE"], device_rows(cfg))
        if cfg.groups:
            lines.append("")
            lines += _table(
                ["POD GROUP", "MIN", "PLACED", "STATE", "WHY"],
                [
                    (g.group, g.min_member, f"{g.placed}/{g.members}", g.state, g.message)
                    for g in cfg.groups
                ],
            )
        if cfg.preemptions:
            lines.append("")
            lines += _table(
                ["PREEMPTOR", "NODE", "VICTIMS"],
                [(p.preemptor, p.node, ", ".join(p.victims)) for p in cfg.preemptions],
            )
        if cfg.recreated_victims:
            lines.append("")
            lines += _table(
                ["VICTIM", "RECREATED AS"],
                [
                    (victim, made or "(not recreated: no controller)")
                    for victim, made in sorted(cfg.recreated_victims.items())
                ],
            )
        if cfg.other_scheduler:
            lines.append(
                f"  not for this configuration's profiles: {', '.join(cfg.other_scheduler)}"
            )
    if report.differences:
        names = [cfg.config for cfg in report.configs]
        lines.append("")
        lines.append("Placements that differ:")
        lines += _table(
            ["POD", *names],
            [(d.pod, *(d.nodes[n] or "(pending)" for n in names)) for d in report.differences],
        )
    return "\n".join(lines) + "\n"
