"""The controller's own metrics: reconciles, released members and groups by phase.

A registry of its own (not prometheus_client's global one), so tests and a second controller
in one process never see each other's samples.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controller.podgroup import PHASES

NAMESPACE = "kube_pysched_controller"


class _GroupsByPhase(Collector):
    """The podgroups gauge, read at scrape time from the controller's phase table."""

    def __init__(self, phases: Callable[[], Mapping[tuple[str, str], str]]) -> None:
        self._phases = phases

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            f"{NAMESPACE}_podgroups",
            "PodGroups this controller has reconciled, by the phase it last saw.",
            labels=["phase"],
        )
        # list() copies in one step under the GIL: the event loop thread may be writing.
        tally = Tally(list(self._phases().values()))
        for phase in (*PHASES, ""):
            if phase or tally[phase]:
                family.add_metric([phase], tally[phase])
        yield family


class Metrics:
    """Counters updated by the reconcile; the gauge reads ``phases`` when scraped."""

    def __init__(self, phases: Callable[[], Mapping[tuple[str, str], str]]) -> None:
        self.registry = CollectorRegistry()
        self.reconciles = Counter(
            f"{NAMESPACE}_reconciles",
            "PodGroup reconciles, by result (changed: a status write; unchanged; error).",
            labelnames=["result"],
            registry=self.registry,
        )
        self.transitions = Counter(
            f"{NAMESPACE}_phase_transitions",
            "PodGroup phase transitions written, by the new phase.",
            labelnames=["phase"],
            registry=self.registry,
        )
        self.released = Counter(
            f"{NAMESPACE}_released_pods",
            "Pending unbound members deleted because their group finished.",
            registry=self.registry,
        )
        self.registry.register(_GroupsByPhase(phases))

    def serve(self, port: int, address: str) -> None:
        """Serve /metrics on a daemon thread (prometheus_client's own server)."""
        start_http_server(port, addr=address, registry=self.registry)
