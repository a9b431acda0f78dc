"""`kube-pysched snapshot` and `kube-pysched simulate`: dump a cluster, then ask it what-ifs.

kube-pysched snapshot [--kubeconfig K] [--context C] -o cluster.yaml
kube-pysched simulate --snapshot cluster.yaml [--config a.yaml ...] [--add pods.yaml ...]
                      [--scale [NS/]KIND/NAME=N ...] [--remove-nodes SELECTOR ...]
                      [--add-nodes node.yaml --count N] [--drain NODE ...]
                      [--disable-eviction] [--recreate-victims] [--seed N] [-o table|json]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from typing import TextIO

import structlog

from scheduler import __version__
from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.client.config import ConfigError as ClientConfigError
from scheduler.client.config import load_client_config
from scheduler.client.listing import PAGE_SIZE, ListedKind, list_all
from scheduler.client.rest import RestClient
from scheduler.config.errors import ConfigError
from scheduler.features import FeatureGateError, FeatureGates
from scheduler.logging import configure_logging
from scheduler.simulate.cluster import ClusterFileError, dump_list
from scheduler.simulate.engine import SimulationError
from scheduler.simulate.fragmentation import ShapeError
from scheduler.simulate.html import render_html
from scheduler.simulate.nodes import parse_selector
from scheduler.simulate.report import render_table
from scheduler.simulate.scale import ScaleTarget
from scheduler.simulate.whatif import WhatIf, simulate
from scheduler.simulate.workloads import UnknownWorkloadError, WorkloadError

EXIT_USAGE = 2
#: A snapshot reads as a kubectl would: a modest rate, bursts for the pages.
SNAPSHOT_QPS = 50.0
SNAPSHOT_BURST = 100


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace | int:
    try:
        return parser.parse_args(argv)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_USAGE


def snapshot_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kube-pysched snapshot",
        description="Dump, read-only, every object scheduling reads, as one kind: List.",
    )
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig file (else $KUBECONFIG)")
    parser.add_argument("--context", default=None, help="kubeconfig context")
    parser.add_argument("-o", "--output", required=True, help="file to write ('-': stdout)")
    parser.add_argument(
        "--page-size", type=int, default=PAGE_SIZE, help=f"objects per list call ({PAGE_SIZE})"
    )
    return parser


class _Progress:
    """One line on stderr per collection, rewritten in place on a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()

    def page(self, kind: ListedKind, count: int) -> None:
        if self.tty:
            self.stream.write(f"\r  {kind.api_version} {kind.kind}: {count}")
            self.stream.flush()

    def done(self, kind: ListedKind, count: int) -> None:
        prefix = "\r" if self.tty else ""
        self.stream.write(f"{prefix}  {kind.api_version} {kind.kind}: {count}\n")

    def skipped(self, kind: ListedKind) -> None:
        prefix = "\r" if self.tty else ""
        self.stream.write(f"{prefix}  {kind.api_version} {kind.kind}: not served, skipped\n")


def snapshot_main(argv: Sequence[str]) -> int:
    args = _parse(snapshot_parser(), argv)
    if isinstance(args, int):
        return args
    if args.page_size < 1:
        print("kube-pysched snapshot: --page-size must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = load_client_config(
            args.kubeconfig,
            context=args.context,
            qps=SNAPSHOT_QPS,
            burst=SNAPSHOT_BURST,
            user_agent=f"kube-pysched-snapshot/{__version__}",
        )
    except ClientConfigError as err:
        print(f"kube-pysched snapshot: {err}", file=sys.stderr)
        return 1
    rest = RestClient(config, max_connections=2)
    progress = _Progress(sys.stderr)
    counts: dict[tuple[str, str], int] = {}
    current: list[ListedKind] = []

    def on_page(kind: ListedKind, count: int) -> None:
        if current and current[-1] != kind:
            progress.done(current[-1], counts[current[-1].api_version, current[-1].kind])
        if not current or current[-1] != kind:
            current.append(kind)
        counts[kind.api_version, kind.kind] = count
        progress.page(kind, count)

    start = time.monotonic()
    print("kube-pysched snapshot: listing", file=sys.stderr)
    try:
        objects = list_all(
            rest, page_size=args.page_size, on_page=on_page, on_skipped=progress.skipped
        )
    except (ApiError, ApiConnectionError) as err:
        where = f" {current[-1].api_version} {current[-1].kind}" if current else ""
        print(f"\nkube-pysched snapshot: cannot list{where}: {err}", file=sys.stderr)
        return 1
    finally:
        rest.close()
    if current:
        progress.done(current[-1], counts[current[-1].api_version, current[-1].kind])
    if args.output == "-":
        dump_list(objects, sys.stdout.buffer)
    else:
        with open(args.output, "wb") as out:
            dump_list(objects, out)
    print(
        f"kube-pysched snapshot: {len(objects)} objects written to {args.output} "
        f"in {time.monotonic() - start:.1f} s",
        file=sys.stderr,
    )
    return 0


def simulate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kube-pysched simulate",
        description="Schedule a what-if against a snapshot with kube-pysched's own scheduling "
        "cycle, offline: no API server is contacted.",
    )
    parser.add_argument("--snapshot", action="append", required=True, help="cluster file(s)")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        help="KubeSchedulerConfiguration file; several are compared (default: the defaults)",
    )
    parser.add_argument(
        "--add",
        action="append",
        default=[],
        help="Pods, Deployments, ReplicaSets, "
        "StatefulSets or Jobs to create (their controllers' pods)",
    )
    parser.add_argument(
        "--drain",
        action="append",
        default=[],
        help="node to cordon and evict through the eviction API, PodDisruptionBudgets "
        "honoured (repeatable)",
    )
    parser.add_argument(
        "--disable-eviction",
        action="store_true",
        help="as kubectl drain's: drain by deletion, bypassing PodDisruptionBudgets",
    )
    parser.add_argument(
        "--scale",
        action="append",
        default=[],
        metavar="[NAMESPACE/]KIND/NAME=N",
        help="scale a Deployment, ReplicaSet or StatefulSet of the snapshot (repeatable)",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default="default",
        help="the namespace of a --scale target that names none (default)",
    )
    parser.add_argument(
        "--remove-nodes",
        action="append",
        default=[],
        metavar="SELECTOR",
        help="delete the nodes this label selector (kubectl's -l syntax) matches (repeatable)",
    )
    parser.add_argument(
        "--add-nodes",
        action="append",
        default=[],
        metavar="FILE",
        help="a Node manifest to add copies of, named NAME-1..NAME-N (repeatable)",
    )
    parser.add_argument(
        "--count",
        type=int,
        default=1,
        help="copies of each --add-nodes template (1)",
    )
    parser.add_argument(
        "--recreate-victims",
        action="store_true",
        help="a preempted pod whose controller recreates it comes back as a new pending pod",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice (0)")
    parser.add_argument("--feature-gates", default="", help="as the scheduler's flag")
    parser.add_argument(
        "--shape",
        default="",
        help="reference pod shape of the room-left figures, e.g. cpu=1,memory=2Gi "
        "(default: the most common request among the added pods)",
    )
    parser.add_argument("-o", "--output", choices=["table", "json"], default="table")
    parser.add_argument(
        "--html", default=None, help="also write the report as one self-contained HTML page"
    )
    return parser


def _what_if_usage(args: argparse.Namespace) -> str | None:
    """A flag combination that cannot mean anything, said before any file is read."""
    if args.count < 1:
        return f"--count must be at least 1, got {args.count}"
    if args.count != 1 and not args.add_nodes:
        return "--count applies to --add-nodes, and none is given"
    for text in args.remove_nodes:
        try:
            parse_selector(text)
        except ValueError as err:
            return f"--remove-nodes: {err}"
    return None


def simulate_main(argv: Sequence[str]) -> int:
    args = _parse(simulate_parser(), argv)
    if isinstance(args, int):
        return args
    try:
        features = FeatureGates.parse(args.feature_gates)
    except FeatureGateError as err:
        print(f"kube-pysched simulate: {err}", file=sys.stderr)
        return EXIT_USAGE
    usage = _what_if_usage(args)
    if usage:
        print(f"kube-pysched simulate: {usage}", file=sys.stderr)
        return EXIT_USAGE
    try:
        targets = [ScaleTarget.parse(t, args.namespace) for t in args.scale]
    except ValueError as err:
        print(f"kube-pysched simulate: --scale {err}", file=sys.stderr)
        return EXIT_USAGE
    configure_logging("console", 0)
    # The scheduler's own lines are for a running process; a simulation reports in its output.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    from scheduler.framework.registry import RegistryError
    from scheduler.plugins.registry import full_registry

    whatif = WhatIf(
        snapshot=args.snapshot,
        configs=args.config,
        add=args.add,
        drain=args.drain,
        seed=args.seed,
        features=features,
        scale=targets,
        remove_nodes=args.remove_nodes,
        add_nodes=args.add_nodes,
        add_node_count=args.count,
        disable_eviction=args.disable_eviction,
        recreate_victims=args.recreate_victims,
        shape=args.shape,
    )
    try:
        report = simulate(whatif, full_registry())
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 1
    except UnknownWorkloadError as err:
        print(f"kube-pysched simulate: {err}", file=sys.stderr)
        return EXIT_USAGE
    except (ClusterFileError, WorkloadError, SimulationError, RegistryError, ShapeError) as err:
        print(f"kube-pysched simulate: {err}", file=sys.stderr)
        return 1
    if args.html:
        try:
            with open(args.html, "w") as page:
                page.write(render_html(report))
        except OSError as err:
            print(f"kube-pysched simulate: cannot write {args.html}: {err}", file=sys.stderr)
            return 1
    if args.output == "json":
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_table(report))
    return 0
