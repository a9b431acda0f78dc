"""Default constraints: System (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) and List,
with the selector helper.DefaultSelector builds from Services and controllers."""

from __future__ import annotations

from scheduler.api.labels import LabelSelector
from scheduler.api.spread import Service, Workload
from scheduler.framework.cycle_state import CycleState
from scheduler.plugins.pod_topology_spread.constraints import default_selector
from scheduler.testing import FakeHandle, make_snapshot
from tests.plugins.pod_topology_spread.kit import (
    filter_codes,
    incoming,
    node,
    plugin_for,
    pods_on,
    scores,
)

FOO_SERVICE = Service("default", "svc", {"foo": ""})
HOSTS = [node(n, hostname=n) for n in ("node-a", "node-b", "node-c", "node-d")]


def _selector(handle: FakeHandle, pod_labels: dict[str, str], owner: tuple[str, str, str] | None):
    wrapper = incoming()
    for key, value in pod_labels.items():
        wrapper.label(key, value)
    if owner is not None:
        wrapper.owner(*owner)
    return default_selector(wrapper.obj(), handle)


def test_system_defaults_spread_by_the_service_selector_over_hostnames() -> None:
    """Nodes without a zone: the zone constraint's "" domain adds the same to every node,
    so the scores equal a single hostname constraint with maxSkew 3 (upstream's case)."""
    pods = [
        *pods_on("node-a", 4, "foo"),
        *pods_on("node-b", 3, "foo"),
        *pods_on("node-c", 2, "foo"),
        *pods_on("node-d", 1, "foo"),
    ]
    handle = FakeHandle(service_list=[FOO_SERVICE])
    got = scores(incoming("foo").obj(), HOSTS, pods, handle=handle)
    assert got == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}


def test_no_service_or_controller_means_no_default_spreading() -> None:
    snap = make_snapshot(HOSTS, pods_on("node-a", 4, "foo"))
    plugin = plugin_for(snap)
    assert plugin.pre_score(CycleState(), incoming("foo").obj(), snap.list()).is_skip()


def test_a_replica_set_selector_is_used() -> None:
    rs = Workload(
        "ReplicaSet", "default", "rs", selector=LabelSelector.parse({"matchLabels": {"foo": ""}})
    )
    pods = [*pods_on("node-a", 2, "foo"), *pods_on("node-b", 1, "foo")]
    handle = FakeHandle(workloads=[rs])
    pod = incoming("foo").owner("ReplicaSet", "rs").obj()
    got = scores(pod, HOSTS[:3], pods, handle=handle)
    # hostname: weight log(5); raw round(2*1.609+2)=5, round(1.609+2)=4, 2; max 5 min 2.
    assert got == {"node-a": 40, "node-b": 60, "node-c": 100}


def test_list_defaulting_applies_hard_default_constraints() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
            }
        ],
    }
    handle = FakeHandle(service_list=[FOO_SERVICE])
    snap = make_snapshot(HOSTS[:2], pods_on("node-a", 1, "foo"))
    plugin = plugin_for(snap, args, handle)
    pod = incoming("foo").obj()
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, snap.list())
    assert status is None
    assert plugin.filter(state, pod, snap.get("node-a")) is not None
    assert plugin.filter(state, pod, snap.get("node-b")) is None
    # a pod with its own constraints ignores the defaults
    own = (
        incoming("foo")
        .spread(5, "kubernetes.io/hostname", "DoNotSchedule", {"matchLabels": {"foo": ""}})
        .obj()
    )
    assert set(filter_codes(own, HOSTS[:2], pods_on("node-a", 1, "foo")).values()) == {0}


def test_default_selector_merges_services_and_controllers() -> None:
    services = [
        FOO_SERVICE,
        Service("default", "other", {"bar": "1"}),
        Service("default", "unrelated", {"baz": "x"}),
        Service("default", "headless", None),
        Service("ns2", "elsewhere", {"foo": ""}),
    ]
    rs_selector = LabelSelector.parse(
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}
    )
    handle = FakeHandle(
        service_list=services,
        workloads=[
            Workload("ReplicaSet", "default", "rs", selector=rs_selector),
            Workload("StatefulSet", "default", "ss", selector=None),
            Workload("ReplicationController", "default", "rc", set_selector={"rc": "y"}),
        ],
    )
    labels = {"foo": "", "bar": "1", "tier": "web", "rc": "y"}
    plain = _selector(handle, labels, None)
    assert plain.matches({"foo": "", "bar": "1"}) and not plain.matches({"foo": ""})
    with_rs = _selector(handle, labels, ("ReplicaSet", "rs", "apps/v1"))
    assert with_rs.matches(labels) and not with_rs.matches({"foo": "", "bar": "1"})
    with_rc = _selector(handle, labels, ("ReplicationController", "rc", "v1"))
    assert with_rc.matches({"foo": "", "bar": "1", "rc": "y"})
    assert not with_rc.matches({"foo": "", "bar": "1"})
    # a StatefulSet with a nil selector adds nothing; so does an owner of another API version.
    assert _selector(handle, labels, ("StatefulSet", "ss", "apps/v1")) == plain
    assert _selector(handle, labels, ("ReplicaSet", "rs", "extensions/v1beta1")) == plain
    assert _selector(handle, {}, None).is_empty()
