"""NodePool's unit tests, written with kube-pysched's testing kit (scheduler.testing)."""

from __future__ import annotations

import pytest
from pysched_node_pool import SPEC
from pysched_node_pool.plugin import ERR_FORBIDDEN

from scheduler.framework import ArgsError, Code, QueueingHint
from scheduler.testing import NodeWrapper, PodWrapper, build_plugin, make_snapshot, run_plugin

ARGS = {
    "labelKey": "example.com/pool",
    "preferredPools": ["reserved", "on-demand"],
    "forbiddenPools": ["spot"],
}


def pool_node(name: str, pool: str | None) -> NodeWrapper:
    node = NodeWrapper(name).capacity(cpu="4", memory="8Gi")
    return node.label("example.com/pool", pool) if pool is not None else node


CLUSTER = make_snapshot(
    [
        pool_node("spot-1", "spot").obj(),
        pool_node("od-1", "on-demand").obj(),
        pool_node("res-1", "reserved").obj(),
        pool_node("plain-1", None).obj(),
    ]
)


def test_forbidden_pools_are_filtered_out_and_preferred_pools_score_in_order() -> None:
    run = run_plugin(build_plugin(SPEC, ARGS), PodWrapper("web").req(cpu="1").obj(), CLUSTER)

    assert run.feasible == ["od-1", "res-1", "plain-1"]
    assert run.rejections() == {"spot-1": ERR_FORBIDDEN}
    assert run.filter_statuses["spot-1"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE  # type: ignore[union-attr]
    assert run.scores == {"od-1": 50, "res-1": 100, "plain-1": 0}


def test_without_forbidden_pools_every_node_passes() -> None:
    args = {"labelKey": "example.com/pool", "preferredPools": ["spot"]}
    run = run_plugin(build_plugin(SPEC, args), PodWrapper("batch").obj(), CLUSTER)

    assert run.feasible == ["spot-1", "od-1", "res-1", "plain-1"]
    assert run.scores == {"spot-1": 100, "od-1": 0, "res-1": 0, "plain-1": 0}


def test_only_nodes_outside_forbidden_pools_requeue_a_rejected_pod() -> None:
    plugin = build_plugin(SPEC, ARGS)
    [registration] = plugin.events_to_register()
    pod = PodWrapper("web").obj()

    assert registration.hint_fn(pod, None, pool_node("spot-2", "spot").obj()) == (
        QueueingHint.QUEUE_SKIP
    )
    assert registration.hint_fn(pod, None, pool_node("res-2", "reserved").obj()) == (
        QueueingHint.QUEUE
    )


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (None, "labelKey: Required value: the node label that names a node's pool"),
        ({"labelKey": "example.com/pool", "pools": []}, 'pools: unknown field "pools"'),
        ({"labelKey": "-bad"}, 'labelKey: Invalid value: "-bad": name part must consist of'),
        (
            {"labelKey": "k", "preferredPools": ["a"], "forbiddenPools": ["a"]},
            'forbiddenPools[0]: Duplicate value: "a"',
        ),
        ({"labelKey": "k", "forbiddenPools": "spot"}, "forbiddenPools: Invalid value"),
    ],
)
def test_bad_args_fail_with_the_field_and_kubernetes_wording(
    raw: dict[str, object] | None, error: str
) -> None:
    with pytest.raises(ArgsError) as caught:
        build_plugin(SPEC, raw)
    assert str(caught.value).startswith(error)
