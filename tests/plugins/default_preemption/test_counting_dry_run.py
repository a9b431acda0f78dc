"""CountingFilter against the general path: the dry run and the nominated-pods two-pass give
the same victims, PDB violations and Statuses on randomized clusters, and the counting form is
only used where it applies."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import cast

import numpy as np
import pytest

from scheduler import metrics
from scheduler.api.objects import Pod
from scheduler.api.resources import Resource
from scheduler.backend.queue.nominator import Nominator
from scheduler.config.load import load_config
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import FilterPlugin
from scheduler.framework.nominations import Nominations
from scheduler.framework.runtime import FilterPass
from scheduler.framework.runtime.counting_filter import CountingFilter, filter_form
from scheduler.framework.status import Status
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import make_node, make_pdb, make_pod
from scheduler.testing.harness import Harness
from tests.plugins.default_preemption.preemption_world import plugin

TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
GPU = "example.com/gpu"


def _harness() -> Harness:
    registry = in_tree_registry()
    spec = load_config(None, set(registry)).profiles[0].to_spec()
    return Harness(spec, plugins=registry, features=FeatureGates())


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = _harness()
    yield harness
    harness.close()


def _gpus(rng: random.Random, extended: bool, choices: list[int]) -> dict[str, str] | None:
    """An extended resource amount, drawn only for the clusters that have one (so the other
    seeds' clusters stay as they were)."""
    return {GPU: str(rng.choice(choices))} if extended else None


def _random_cluster(h: Harness, rng: random.Random, profile: str, extended: bool = False) -> None:
    for i in range(30):
        name = f"n{i}"
        h.add_node(
            make_node(
                name,
                cpu=str(rng.choice([2, 4, 8])),
                memory=f"{rng.choice([4, 8, 16])}Gi",
                pods=rng.choice([3, 5, 110]),
                taints=[TAINT] if rng.random() < 0.1 else None,
                unschedulable=rng.random() < 0.05,
                labels={"zone": rng.choice(["a", "b"])},
                extended=_gpus(rng, extended, [0, 1, 2, 4]),
            )
        )
        for j in range(rng.randint(0, 5)):
            pod = make_pod(
                f"p{i}-{j}",
                node_name=name,
                cpu=f"{rng.choice([100, 500, 900, 1500])}m",
                memory=f"{rng.choice([100, 500, 2000])}Mi",
                requests=_gpus(rng, extended, [0, 1, 2]),
                priority=rng.choice([0, 0, 5, 10, 50, 100]),
                labels={"app": rng.choice(["a", "b"])},
                start_time=f"2026-01-01T00:00:{rng.randint(0, 59):02d}Z",
                scheduler_name=profile,
            )
            h.add_assigned_pod(pod)
        if rng.random() < 0.3:
            nominated = make_pod(
                f"nom{i}",
                cpu=f"{rng.choice([500, 1500, 3000])}m",
                priority=rng.choice([5, 50, 100]),
                scheduler_name=profile,
            )
            h.pods[nominated.key] = nominated
            h.queue.nominator.add_nominated_pod(nominated, name)
    h.pdbs.append(make_pdb("pdb", match_labels={"app": "a"}, disruptions_allowed=rng.randint(0, 3)))


def _random_cluster_and_preemptor(h: Harness, seed: int, extended: bool = False) -> Pod:
    """A random cluster in the harness's snapshot and a preemptor for it, both from `seed`
    (`extended`: nodes and pods with an extended resource too)."""
    rng = random.Random(seed)
    profile = h.fwk.profile_name
    _random_cluster(h, rng, profile, extended)
    h.cache.update_snapshot(h.snapshot)
    return make_pod(
        "preemptor",
        cpu=f"{rng.choice([500, 1500, 3000, 6000])}m",
        memory=f"{rng.choice([100, 1000, 6000])}Mi",
        requests=_gpus(rng, extended, [0, 1, 3]),
        priority=rng.choice([10, 50, 100]),
        scheduler_name=profile,
    )


def _summary(result: tuple[list[Pod], int, Status | None]) -> object:
    victims, violations, status = result
    if status is not None:
        return (status.code, status.message(), status.plugin)
    return ([v.key for v in victims], violations)


def _prefiltered(h: Harness, pod: Pod) -> CycleState:
    state = CycleState()
    _, status, _ = h.fwk.run_pre_filter_plugins(state, pod, h.snapshot.list())
    assert status is None
    return state


@pytest.mark.parametrize("seed", range(20))
def test_counting_dry_run_picks_the_same_victims_as_the_general_path(h: Harness, seed: int) -> None:
    preemptor = _random_cluster_and_preemptor(h, seed)
    pl = plugin(h)
    state = _prefiltered(h, preemptor)
    assert h.fwk.counting_filter(state, preemptor) is not None
    counted = [
        _summary(pl.select_victims_on_node(state, preemptor, info, h.pdbs))
        for info in h.snapshot.list()
    ]
    two_pass_counted = [
        h.fwk.run_filter_plugins_with_nominated_pods(state, preemptor, info)
        for info in h.snapshot.list()
    ]

    general = _prefiltered(h, preemptor)
    CountingFilter.decline(general, preemptor)
    assert h.fwk.counting_filter(general, preemptor) is None
    expected = [
        _summary(pl.select_victims_on_node(general, preemptor, info, h.pdbs))
        for info in h.snapshot.list()
    ]
    two_pass_expected = [
        h.fwk.run_filter_plugins_with_nominated_pods(general, preemptor, info)
        for info in h.snapshot.list()
    ]
    assert counted == expected
    assert [s and (s.code, s.message(), s.plugin) for s in two_pass_counted] == [
        s and (s.code, s.message(), s.plugin) for s in two_pass_expected
    ]


@pytest.mark.parametrize("extended", [False, True])
def test_the_column_dry_run_picks_what_the_general_path_picks_node_by_node(extended: bool) -> None:
    """select_victims_on_nodes decides the nodes with potential victims together (columns.py)
    and leaves the others to the node-by-node path; on 20 random clusters every node's victims,
    PDB violations and Status are the general path's, also where the pod does not fit even with
    every victim gone and one node's Status is shared by the others of its case."""
    nodes_with_victims = shared_statuses = 0
    for seed in range(20):
        h = _harness()
        try:
            preemptor = _random_cluster_and_preemptor(h, seed, extended)
            pl = plugin(h)
            state = _prefiltered(h, preemptor)
            counting = h.fwk.counting_filter(state, preemptor)
            assert counting is not None and counting.fit_requests(state, preemptor) is not None
            nodes = h.snapshot.list()
            together = pl.select_victims_on_nodes(state, preemptor, nodes, h.pdbs)

            general = _prefiltered(h, preemptor)
            CountingFilter.decline(general, preemptor)
            one_by_one = [
                pl.select_victims_on_node(general, preemptor, info, h.pdbs) for info in nodes
            ]
            assert [_summary(r) for r in together] == [_summary(r) for r in one_by_one], seed
            nodes_with_victims += sum(1 for victims, _, _ in one_by_one if victims)
            statuses = [status for _, _, status in together if status is not None]
            shared_statuses += len(statuses) - len({id(status) for status in statuses})
        finally:
            h.close()
    assert nodes_with_victims > 20  # victims were compared, not only Statuses
    assert shared_statuses > 20  # so were the Statuses worded once per case


def _filter_observations() -> Counter[tuple[str, str]]:
    """How many Filter calls each plugin has observed so far, by (plugin, status label)."""
    counts: Counter[tuple[str, str]] = Counter()
    for family in metrics.plugin_execution_duration.collect():
        for sample in family.samples:
            labels = sample.labels
            if sample.name.endswith("_count") and labels["extension_point"] == "Filter":
                counts[labels["plugin"], labels["status"]] = int(sample.value)
    return counts


@pytest.mark.parametrize("seed", range(5))
def test_a_sampled_cycle_observes_the_calls_the_general_path_makes(h: Harness, seed: int) -> None:
    """A cycle that records plugin metrics keeps the counting form (not the general path's
    copies) and observes one Filter call per plugin per question, as the general path does."""
    preemptor = _random_cluster_and_preemptor(h, seed)
    pl = plugin(h)
    nodes = h.snapshot.list()

    def observed(state: CycleState) -> tuple[Counter[tuple[str, str]], list[object]]:
        state.record_plugin_metrics = True
        before = _filter_observations()
        results = [_summary(r) for r in pl.select_victims_on_nodes(state, preemptor, nodes, h.pdbs)]
        after = _filter_observations()
        after.subtract(before)
        return +after, results

    sampled = _prefiltered(h, preemptor)
    assert h.fwk.counting_filter(sampled, preemptor) is not None
    general = _prefiltered(h, preemptor)
    CountingFilter.decline(general, preemptor)
    counted, counted_results = observed(sampled)
    expected, expected_results = observed(general)
    assert counted_results == expected_results
    assert counted == expected and sum(expected.values()) > 0


def test_the_counting_form_applies_only_when_nothing_else_looks_at_pods(h: Harness) -> None:
    h.add_node(make_node("n"))
    h.cache.update_snapshot(h.snapshot)
    profile = h.fwk.profile_name
    plain = make_pod("plain", cpu="1", scheduler_name=profile)
    assert h.fwk.counting_filter(_prefiltered(h, plain), plain) is not None
    # NodePorts runs (and keeps its own state) for a pod with host ports.
    ports = make_pod("ports", cpu="1", host_ports=[8080], scheduler_name=profile)
    assert h.fwk.counting_filter(_prefiltered(h, ports), ports) is None
    # InterPodAffinity runs for a pod with required anti-affinity.
    anti = make_pod(
        "anti",
        cpu="1",
        labels={"app": "a"},
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "a"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
        scheduler_name=profile,
    )
    assert h.fwk.counting_filter(_prefiltered(h, anti), anti) is None


@pytest.mark.parametrize("seed", range(20))
def test_the_diagnosis_of_nodes_with_nominated_pods_equals_the_two_pass_node_by_node(
    h: Harness, seed: int
) -> None:
    """FilterPass.check and .rejections run the first pass of many nominated rows at once on
    the table with their nominated pods counted; each row's verdict and Status are the
    general path's."""
    preemptor = _random_cluster_and_preemptor(h, seed)
    state = _prefiltered(h, preemptor)
    assert h.fwk.counting_filter(state, preemptor) is not None
    table = h.snapshot.table
    # As a cycle does: every row checked, then the diagnosis.
    filter_pass = FilterPass(h.fwk, state, preemptor, table)
    feasible = [filter_pass.check(row, info) is None for row, info in enumerate(table.infos)]
    diagnosed = filter_pass.rejections(np.arange(table.n)).to_list()

    general = _prefiltered(h, preemptor)
    CountingFilter.decline(general, preemptor)
    expected = [
        h.fwk.run_filter_plugins_with_nominated_pods(general, preemptor, info)
        for info in table.infos
    ]
    assert feasible == [s is None for s in expected]
    assert [s and (s.code, s.message(), s.plugin) for s in diagnosed] == [
        s and (s.code, s.message(), s.plugin) for s in expected
    ]


def test_a_preempting_cycle_reads_the_nominations_once(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Filter pass and the dry run after it share one read of the nominations (both see
    them as they stood at the cycle's first question)."""
    profile = h.fwk.profile_name
    for i in range(3):
        h.add_node(make_node(f"n{i}", cpu="4", memory="32Gi"))
        for j in range(4):
            h.add_assigned_pod(
                make_pod(f"v{i}-{j}", node_name=f"n{i}", cpu="900m", scheduler_name=profile)
            )
    waiting = make_pod("waiting", cpu="3970m", priority=1000, scheduler_name=profile)
    h.pods[waiting.key] = waiting
    h.queue.nominator.add_nominated_pod(waiting, "n0")
    reads = []
    read = Nominator.nominations

    def counted(nominator: Nominator) -> Nominations:
        reads.append(1)
        return read(nominator)

    monkeypatch.setattr(Nominator, "nominations", counted)
    preemptor = make_pod("preemptor", cpu="3970m", priority=1000, scheduler_name=profile)
    h.add_pod(preemptor)
    h.schedule_next()
    assert h.queue.nominator.nominated_node_for(preemptor.uid) in {"n1", "n2"}
    assert len(reads) == 1


class _ReadsNode:
    name = "ReadsNode"
    filter_reads_node_only = True


class _Counts:
    name = "Counts"

    def filter_counts(
        self, state: CycleState, pod: Pod, allocatable: Resource, requested: Resource, pods: int
    ) -> Status | None:
        return None


class _Room(_Counts):
    name = "Room"

    def fit_request(self, state: CycleState, pod: Pod) -> Resource:
        return Resource()


class _Other:
    name = "Other"


def test_each_filter_plugins_form_is_worked_out_once_per_profile(h: Harness) -> None:
    """filter_form sorts plugins as the Protocols do; the framework keeps one per Filter
    plugin of its profile (in-tree NodeResourcesFit is a room rule)."""
    assert filter_form(cast(FilterPlugin, _ReadsNode())) == "node"
    assert filter_form(cast(FilterPlugin, _Counts())) == "count"
    assert filter_form(cast(FilterPlugin, _Room())) == "room"
    assert filter_form(cast(FilterPlugin, _Other())) is None
    assert set(h.fwk.filter_forms) == {pl.name for pl in h.fwk.filter_plugins}
    assert h.fwk.filter_forms["NodeResourcesFit"] == "room"
    assert h.fwk.filter_forms["NodeUnschedulable"] == "node"
