"""Opportunistic batching (KEP-5598): signatures, hints, flushes and the gate.

The tiny Harness plugins (CpuFit, MostFreeCpu) sign the pod's requests, so identical pods share a
signature. Each test uses its own profile name: the batch metrics are process-wide.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler import metrics
from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.config import load_config
from scheduler.config.load import parse_config
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.framework.registry import PluginSpec
from scheduler.framework.runtime.batch import OpportunisticBatch
from scheduler.framework.signers import RESOURCES, SignFragment, resources
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import make_node, make_pod
from scheduler.testing.builders import pod_json
from scheduler.testing.harness import Harness, profile_spec, registry

_names = itertools.count()


def _profile() -> str:
    return f"batch-{next(_names)}"


def _sample(name: str, **labels: str) -> float:
    value = metrics.REGISTRY.get_sample_value(name, labels)
    return value or 0.0


def attempts(profile: str, result: str) -> float:
    return _sample("scheduler_batch_attempts_total", profile=profile, result=result)


def flushed(profile: str, reason: str) -> float:
    return _sample("scheduler_batch_cache_flushed_total", profile=profile, reason=reason)


@pytest.fixture
def profile() -> str:
    return _profile()


@pytest.fixture
def h(profile: str) -> Iterator[Harness]:
    harness = Harness(profile_spec(profile))
    yield harness
    harness.close()


def pod(name: str, profile: str, cpu: str = "1", **kwargs: Any) -> Pod:
    return make_pod(name, cpu=cpu, scheduler_name=profile, **kwargs)


def schedule(h: Harness, p: Pod) -> str:
    """Adds and schedules the pod; the node it was assumed on ("" if it was not)."""
    h.add_pod(p)
    h.schedule_next()
    assumed = h.cache.get_pod(p.uid)
    return assumed.node_name if assumed is not None else ""


def nodes(h: Harness, *cpus: int) -> None:
    for i, cpu in enumerate(cpus):
        h.add_node(make_node(f"n{i}", cpu=str(cpu)))


# --- signatures ---------------------------------------------------------------------------


def in_tree(profile: str, **plugin_args: dict[str, Any]) -> Harness:
    """The default plugins of kube-scheduler v1.37 under `profile`, with these plugin args."""
    raw: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": profile,
                "pluginConfig": [{"name": n, "args": a} for n, a in plugin_args.items()],
            }
        ],
    }
    cfg = parse_config(raw, set(in_tree_registry()))
    return Harness(cfg.profiles[0].to_spec(), plugins=in_tree_registry())


LIST_SPREADING = {"defaultingType": "List"}


def test_default_profile_signs_no_pod_because_of_system_default_spreading() -> None:
    """PodTopologySpread refuses every pod while it has default constraints, as upstream: with
    kube-scheduler's default configuration no pod is ever batched."""
    h = in_tree(_profile())
    try:
        assert h.fwk.signs_pods
        assert h.fwk.sign_pod(make_pod("p", cpu="1", scheduler_name=h.fwk.profile_name)) is None
    finally:
        h.close()


@pytest.fixture
def signer() -> Iterator[Harness]:
    harness = in_tree(_profile(), PodTopologySpread=LIST_SPREADING)
    yield harness
    harness.close()


def sign(h: Harness, name: str = "p", **kwargs: Any) -> bytes | None:
    kwargs.setdefault("cpu", "1")
    return h.fwk.sign_pod(make_pod(name, scheduler_name=h.fwk.profile_name, **kwargs))


def test_identical_pods_share_a_signature(signer: Harness) -> None:
    a = sign(signer, "a", uid="u1")
    assert a is not None
    assert sign(signer, "b", uid="u2") == a
    assert sign(signer, "c", cpu="2") != a


@pytest.mark.parametrize(
    ("why", "kwargs"),
    [
        (
            "pod anti-affinity",
            {
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}
                        ]
                    }
                }
            },
        ),
        (
            "spread constraints",
            {
                "topology_spread_constraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"a": "b"}},
                    }
                ]
            },
        ),
    ],
)
def test_pods_whose_placement_depends_on_other_pods_are_not_signed(
    signer: Harness, why: str, kwargs: dict[str, Any]
) -> None:
    assert sign(signer, **kwargs) is None, why


def test_pods_with_resource_claims_are_not_signed(signer: Harness) -> None:
    raw = pod_json("p", cpu="1", scheduler_name=signer.fwk.profile_name)
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
    assert signer.fwk.sign_pod(parse_pod(raw)) is None


def _fields(p: Pod) -> dict[str, Any]:
    return {f: getattr(p, f) for f in p.__dataclass_fields__ if not f.startswith("_")}


def test_signature_follows_what_filter_and_score_read(signer: Harness) -> None:
    base = sign(signer)
    toleration = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    other = {"key": "a", "operator": "Exists", "effect": "NoSchedule"}
    assert sign(signer, tolerations=[toleration, other]) == sign(
        signer, tolerations=[other, toleration]
    )
    different = [
        sign(signer, tolerations=[toleration]),
        sign(signer, node_selector={"zone": "a"}),
        sign(signer, host_ports=[8080]),
        sign(signer, labels={"app": "x"}),  # InterPodAffinity: existing pods' terms may match
        sign(signer, node_name="n1"),
    ]
    assert all(s is not None and s != base for s in different)
    assert len(set(different)) == len(different)


def test_configmap_and_secret_volumes_do_not_change_the_signature(signer: Harness) -> None:
    def with_volumes(*volumes: dict[str, Any]) -> bytes | None:
        p = make_pod("p", cpu="1", scheduler_name=signer.fwk.profile_name)
        from scheduler.api.parse import _volume

        return signer.fwk.sign_pod(Pod(**{**_fields(p), "volumes": tuple(map(_volume, volumes))}))

    base = with_volumes()
    assert with_volumes({"name": "cfg", "configMap": {"name": "x"}}) == base
    assert with_volumes({"name": "s", "secret": {"secretName": "y"}}) == base
    claim = with_volumes({"name": "data", "persistentVolumeClaim": {"claimName": "c"}})
    assert claim is not None and claim != base


def test_labels_do_not_matter_when_existing_pods_preferred_terms_are_ignored() -> None:
    h = in_tree(
        _profile(),
        PodTopologySpread=LIST_SPREADING,
        InterPodAffinity={"ignorePreferredTermsOfExistingPods": True},
    )
    try:
        assert sign(h, labels={"app": "x"}) == sign(h, labels={"app": "y"})
    finally:
        h.close()


class Unsigned:
    """An out-of-tree Filter plugin that knows nothing of signatures."""

    name = "Unsigned"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return []


def test_a_plugin_without_sign_pod_makes_the_profile_unsignable() -> None:
    name = _profile()
    plugins = registry().merge({"Unsigned": PluginSpec(lambda args, h: Unsigned())})
    spec = profile_spec(name)
    enabled = (*spec.plugin_set("multiPoint").enabled, PluginRef("Unsigned"))
    h = Harness(
        ProfileSpec(name, plugins={"multiPoint": PluginSetSpec(enabled=enabled)}), plugins=plugins
    )
    try:
        assert not h.fwk.signs_pods
        assert h.fwk.sign_pod(pod("p", name)) is None
        nodes(h, 4, 8)
        for i in range(3):
            schedule(h, pod(f"p{i}", name))
        assert attempts(name, "hint_used") == 0
        assert flushed(name, "pod_not_batchable") == 3
    finally:
        h.close()


def test_sign_is_an_extension_point_of_the_framework_metrics(signer: Harness) -> None:
    sign(signer)
    count = _sample(
        "scheduler_framework_extension_point_duration_seconds_count",
        extension_point="Sign",
        status="Success",
        profile=signer.fwk.profile_name,
    )
    assert count >= 1


# --- hints --------------------------------------------------------------------------------


def test_identical_pods_after_the_first_are_placed_on_their_hint(h: Harness, profile: str) -> None:
    for name, cpu in (("n0", "2500m"), ("n1", "5500m"), ("n2", "9")):
        h.add_node(make_node(name, cpu=cpu))  # MostFreeCpu scores 25, 55 and 90
    placed = [schedule(h, pod(f"p{i}", profile)) for i in range(6)]
    assert attempts(profile, "no_hint") == 1
    assert attempts(profile, "hint_used") == 5
    assert h.fwk.batch is not None and h.fwk.batch.batched_pods == 5
    # n2 still fits after each pod, so it is rescored (90, 80, ... 50) and competes with the
    # kept n1 (55), which wins once, as a full cycle would choose.
    assert placed == ["n2", "n2", "n2", "n2", "n1", "n2"]
    assert _sample("scheduler_batch_rescore_attempts_total", profile=profile) == 5


def test_a_hint_that_no_longer_fits_is_not_used(h: Harness, profile: str) -> None:
    for name, cpu in (("n0", "4500m"), ("n1", "5"), ("n2", "8")):
        h.add_node(make_node(name, cpu=cpu))
    assert schedule(h, pod("p0", profile, cpu="4")) == "n2"  # n2 rescored: 40, below n1's 50
    # The hint, n1, is filled behind the batch's back.
    h.add_assigned_pod(make_pod("filler", cpu="2", node_name="n1"))
    assert schedule(h, pod("p1", profile, cpu="4")) == "n0"
    assert attempts(profile, "hint_not_used") == 1
    assert attempts(profile, "hint_used") == 0


def test_pod_with_another_signature_flushes(h: Harness, profile: str) -> None:
    nodes(h, 2, 4)
    schedule(h, pod("p0", profile))
    schedule(h, pod("p1", profile, cpu="500m"))
    assert flushed(profile, "pod_incompatible") == 1
    assert attempts(profile, "no_hint") == 2


def test_cycle_of_a_failed_pod_in_between_flushes(h: Harness, profile: str) -> None:
    nodes(h, 2, 4)
    schedule(h, pod("p0", profile))
    schedule(h, pod("huge", profile, cpu="64"))  # incompatible, then fails: nothing stored
    schedule(h, pod("p1", profile))
    assert flushed(profile, "pod_incompatible") == 1
    assert flushed(profile, "pod_skipped") == 1


def test_nominated_pod_flushes(h: Harness, profile: str) -> None:
    nodes(h, 2, 4)
    schedule(h, pod("p0", profile))
    schedule(h, pod("p1", profile, nominated_node_name="n0"))
    assert flushed(profile, "pod_nominated") == 1


def test_state_older_than_500ms_expires(h: Harness, profile: str) -> None:
    nodes(h, 2, 4, 8)
    schedule(h, pod("p0", profile))
    h.clock.step(0.4)
    schedule(h, pod("p1", profile))
    assert attempts(profile, "hint_used") == 1
    h.clock.step(0.6)
    schedule(h, pod("p2", profile))
    assert flushed(profile, "expired") == 1


def test_last_chosen_node_deleted_flushes(h: Harness, profile: str) -> None:
    nodes(h, 2, 4)
    assert schedule(h, pod("p0", profile)) == "n1"
    h.cache.remove_node(make_node("n1", cpu="4"))
    schedule(h, pod("p1", profile))
    assert flushed(profile, "node_missing") == 1


def test_single_feasible_node_keeps_nothing(h: Harness, profile: str) -> None:
    nodes(h, 2)
    schedule(h, pod("p0", profile))
    assert flushed(profile, "empty_list") == 1


class Flaky:
    """Filter, PreScore, Score and NormalizeScore that fail on demand (signs everything)."""

    name = "Flaky"

    def __init__(self) -> None:
        self.fail: set[str] = set()

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        return [SignFragment(RESOURCES, resources(pod))], None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return Status(Code.ERROR, "boom") if "filter" in self.fail else None

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        return Status(Code.ERROR, "boom") if "pre_score" in self.fail else None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        return Status(Code.ERROR, "boom") if "score" in self.fail else 0

    def score_extensions(self) -> Flaky:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: Any) -> Status | None:
        return Status(Code.ERROR, "boom") if "normalize" in self.fail else None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return []


@pytest.mark.parametrize(
    ("failing", "reason"),
    [
        ("filter", "filter_error"),
        ("pre_score", "prescore_error"),
        ("score", "rescore_error"),
        ("normalize", "normalize_error"),
    ],
)
def test_errors_while_refreshing_the_hint_flush(failing: str, reason: str) -> None:
    name = _profile()
    flaky = Flaky()
    plugins = registry().merge({"Flaky": PluginSpec(lambda args, h: flaky)})
    base = profile_spec(name)
    enabled = (*base.plugin_set("multiPoint").enabled, PluginRef("Flaky", 1))
    h = Harness(
        ProfileSpec(name, plugins={"multiPoint": PluginSetSpec(enabled=enabled)}), plugins=plugins
    )
    try:
        nodes(h, 4, 8)
        schedule(h, pod("p0", name))  # on n1, which the next pod still fits: rescored
        batch = h.fwk.batch
        assert batch is not None
        state = CycleState()
        p1 = pod("p1", name)
        h.cache.update_snapshot(h.snapshot)
        h.fwk.run_pre_filter_plugins(state, p1, h.snapshot.list())
        flaky.fail = {failing}
        signature = h.fwk.sign_pod(p1)
        hint = batch.get_node_hint(p1, signature, state, h.queue.scheduling_cycle + 1)
        assert hint == ""
        assert flushed(name, reason) == 1
        if failing != "filter":
            assert _sample("scheduler_batch_rescore_attempts_total", profile=name) == 1
    finally:
        h.close()


def test_store_without_signature_flushes_as_not_batchable(h: Harness, profile: str) -> None:
    batch = OpportunisticBatch(h.fwk, h.clock)
    batch.store_schedule_results(None, "", "n0", 3, 1)
    assert flushed(profile, "pod_not_batchable") == 1
    batch.store_schedule_results(None, "", "n0", 0, 2)
    assert flushed(profile, "empty_list") == 1


# --- the gate -----------------------------------------------------------------------------


def test_gate_off_gives_no_hints_and_observes_no_batch_metrics() -> None:
    name = _profile()
    h = Harness(profile_spec(name), features=FeatureGates({"OpportunisticBatching": False}))
    try:
        assert h.fwk.batch is None
        nodes(h, 2, 4, 8)
        for i in range(4):
            schedule(h, pod(f"p{i}", name))
        for family in (
            "scheduler_batch_attempts_total",
            "scheduler_batch_cache_flushed_total",
            "scheduler_get_node_hint_duration_seconds_count",
            "scheduler_store_schedule_results_duration_seconds_count",
            "scheduler_batch_rescore_attempts_total",
        ):
            for metric in metrics.REGISTRY.collect():
                for sample in metric.samples:
                    if sample.name == family:
                        assert sample.labels.get("profile") != name
        assert (
            _sample(
                "scheduler_framework_extension_point_duration_seconds_count",
                extension_point="Sign",
                status="Success",
                profile=name,
            )
            == 0
        )
    finally:
        h.close()


def test_gate_off_queue_does_not_sign() -> None:
    h = Harness(profile_spec(_profile()), features=FeatureGates({"OpportunisticBatching": False}))
    try:
        p = pod("p", h.fwk.profile_name)
        h.add_pod(p)
        info = h.queue.get_pod_info(p.uid)
        assert info is not None and info.pod_signature is None
    finally:
        h.close()


def test_default_gates_have_batching_on() -> None:
    assert FeatureGates().enabled("OpportunisticBatching")
    assert load_config(None, set(in_tree_registry())).profiles


# --- differential: gate on and off place the same -----------------------------------------

MOST_ALLOCATED = {
    "scoringStrategy": {
        "type": "MostAllocated",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
    }
}


def _placements(batching: bool, num_nodes: int, num_pods: int) -> tuple[dict[str, str], str]:
    """Every pod's node with the default plugins, bin-packing (MostAllocated) and List
    spreading defaults (so that pods are signed), with OpportunisticBatching on or off.

    Nodes are equal but start with distinct usage (node i has 10+i of its 100 cpu and memory
    units used), and each pod takes one unit of both: the fullest node that still fits is the
    unique best until it is full, so the placement is deterministic."""
    name = _profile()
    raw: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": name,
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": MOST_ALLOCATED},
                    {"name": "PodTopologySpread", "args": LIST_SPREADING},
                ],
            }
        ],
    }
    spec = parse_config(raw, set(in_tree_registry())).profiles[0].to_spec()
    features = FeatureGates({"OpportunisticBatching": batching})
    h = Harness(spec, plugins=in_tree_registry(), features=features)
    try:
        for i in range(num_nodes):
            h.add_node(make_node(f"n{i:02}", cpu="10", memory="10000Mi", pods=200))
            used = (10 + i) * 100
            h.add_assigned_pod(
                make_pod(f"base-{i}", cpu=f"{used}m", memory=f"{used}Mi", node_name=f"n{i:02}")
            )
        placed: dict[str, str] = {}
        for i in range(num_pods):
            p = make_pod(f"p{i:03}", cpu="100m", memory="100Mi", scheduler_name=name)
            placed[p.name] = schedule(h, p)
        h.api.wait_for(lambda: len(h.api.binds) == num_pods)
        return placed, name
    finally:
        h.close()


def test_gate_on_and_off_place_identical_pods_identically() -> None:
    off, _ = _placements(False, 50, 250)
    on, name = _placements(True, 50, 250)
    assert on == off
    assert "" not in on.values()
    # Bin-packing: n49 (the fullest) takes 41 pods, then n48 42 ...
    assert [on[f"p{i:03}"] for i in (0, 40, 41, 82, 83)] == ["n49", "n49", "n48", "n48", "n47"]
    assert attempts(name, "no_hint") == 1
    assert attempts(name, "hint_used") == 249
