"""Reserve, Unreserve, PreBindPreFlight and PreBind of VolumeBinding: the assume cache, the API
updates and the wait for the PersistentVolume controller, with a deadline."""

from __future__ import annotations

import threading
import time
from typing import Any

from scheduler.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    parse_claim,
    parse_volume,
)
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code
from scheduler.plugins.volume_binding import SPEC
from scheduler.testing import FakeHandle, build_plugin, make_node, make_snapshot, run_plugin
from tests.plugins.volume_binding.objects import HOSTNAME, claim, pod, storage_class, volume

POLL = 0.01


def setup(*objects: Any, timeout: int = 5) -> tuple[Any, FakeHandle]:
    nodes = [make_node(n, labels={HOSTNAME: n}) for n in ("n1", "n2")]
    handle = FakeHandle(snap=make_snapshot(nodes))
    handle.static_storage.add(storage_class(), *objects)
    plugin = build_plugin(SPEC, {"bindTimeoutSeconds": timeout}, handle)
    plugin.binder.poll_interval = POLL
    return plugin, handle


def schedule(plugin: Any, handle: FakeHandle, p: Any, node: str) -> CycleState:
    r = run_plugin(plugin, p, handle.snap)
    assert node in r.feasible, r.rejections()
    assert plugin.reserve(r.state, p, node) is None
    return r.state


def test_reserve_assumes_the_volume_for_the_next_pods() -> None:
    plugin, handle = setup(claim("a"), claim("b"), volume("pv", node="n1"))
    state = schedule(plugin, handle, pod("p1", "a"), "n1")
    assumed = plugin.binder.pv_cache.get("pv")
    assert assumed.claim_ref.name == "a"
    assert assumed.annotations[ANN_BOUND_BY_CONTROLLER] == "yes"
    # The informer still has the volume unbound; the next pod sees it taken.
    assert handle.static_storage.volume("pv").claim_ref is None
    assert run_plugin(plugin, pod("p2", "b"), handle.snap).feasible == []
    plugin.unreserve(state, pod("p1", "a"), "n1")
    assert plugin.binder.pv_cache.get("pv").claim_ref is None
    assert run_plugin(plugin, pod("p2", "b"), handle.snap).feasible == ["n1"]


def test_a_newer_informer_version_wins_over_the_assumption() -> None:
    plugin, handle = setup(claim("a"), volume("pv", node="n1"))
    schedule(plugin, handle, pod("p1", "a"), "n1")
    handle.static_storage.add(volume("pv", node="n1", rv="7", labels={"new": "yes"}))
    got = plugin.binder.pv_cache.get("pv")
    assert got.resource_version == "7" and got.claim_ref is None
    assert plugin.binder.pv_cache.assumed_count() == 0


def test_reserve_fails_when_the_informer_moved_on() -> None:
    plugin, handle = setup(claim("a"), volume("pv", node="n1"))
    r = run_plugin(plugin, pod("p1", "a"), handle.snap)
    handle.static_storage.add(volume("pv", node="n1", rv="2"))
    status = plugin.reserve(r.state, pod("p1", "a"), "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == '"pv" is out of sync (stored: 2, assume: 1)'


def test_all_bound_pods_skip_pre_bind() -> None:
    c = claim("a", volume="pv", bound=True)
    plugin, handle = setup(c, volume("pv", node="n1", claim_ref=c))
    state = schedule(plugin, handle, pod("p", "a"), "n1")
    assert plugin.pre_bind_pre_flight(state, pod("p", "a"), "n1").code == Code.SKIP
    assert plugin.pre_bind(state, pod("p", "a"), "n1") is None
    # A pod without claims too.
    state = schedule(plugin, handle, pod("q"), "n2")
    assert plugin.pre_bind_pre_flight(state, pod("q"), "n2").code == Code.SKIP


def pv_controller(handle: FakeHandle, *, bind: bool = True) -> None:
    """Binds what the scheduler wrote, as the PV controller would, on another thread, once
    PreBind has written it (each test's pod writes one object)."""
    api = handle.fake_api

    def run() -> None:
        api.wait_for(lambda: bool(api.volume_updates or api.claim_updates))
        storage = handle.static_storage
        for raw in handle.fake_api.volume_updates:
            pv = parse_volume(raw)
            storage.add(pv)
            assert pv.claim_ref is not None
            c = storage.claim(pv.claim_ref.namespace, pv.claim_ref.name)
            assert c is not None
            if bind:
                storage.add(_bound(c.raw, pv.name))
        for raw in handle.fake_api.claim_updates:
            storage.add(parse_claim(raw))
            if bind:
                storage.add(
                    volume(f"pvc-{raw['metadata']['name']}", sc="csi", node="n1", phase="Bound")
                )
                storage.add(_bound(raw, f"pvc-{raw['metadata']['name']}"))

    threading.Thread(target=run, daemon=True).start()


def _bound(raw: Any, volume_name: str) -> Any:
    meta = raw["metadata"]
    rv = str(int(meta["resourceVersion"]) + 1)
    annotations = {**meta.get("annotations", {}), ANN_BIND_COMPLETED: "yes"}
    return parse_claim(
        {
            **raw,
            "metadata": {**meta, "resourceVersion": rv, "annotations": annotations},
            "spec": {**raw["spec"], "volumeName": volume_name},
            "status": {"phase": "Bound"},
        }
    )


def test_pre_bind_writes_the_claim_ref_and_waits_for_the_controller() -> None:
    plugin, handle = setup(claim("a"), volume("pv", node="n1"))
    p = pod("p", "a")
    state = schedule(plugin, handle, p, "n1")
    assert plugin.pre_bind_pre_flight(state, p, "n1") is None
    pv_controller(handle)
    assert plugin.pre_bind(state, p, "n1") is None
    [sent] = handle.fake_api.volume_updates
    assert sent["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "default",
        "name": "a",
        "uid": "uid-a",
        "apiVersion": "v1",
        "resourceVersion": "1",
    }
    assert sent["metadata"]["annotations"][ANN_BOUND_BY_CONTROLLER] == "yes"
    assert handle.fake_api.claim_updates == []


def test_pre_bind_of_a_claim_to_provision() -> None:
    sc = storage_class("csi", provisioner="csi.example.com")
    plugin, handle = setup(claim("a", sc="csi"), sc)
    p = pod("p", "a")
    state = schedule(plugin, handle, p, "n1")
    assert plugin.binder.pvc_cache.get("default/a").annotations[ANN_SELECTED_NODE] == "n1"
    pv_controller(handle)
    assert plugin.pre_bind(state, p, "n1") is None
    [sent] = handle.fake_api.claim_updates
    assert sent["metadata"]["annotations"][ANN_SELECTED_NODE] == "n1"


def test_pre_bind_times_out() -> None:
    plugin, handle = setup(claim("a"), volume("pv", node="n1"), timeout=0)
    plugin.binder.bind_timeout = 0.05
    p = pod("p", "a")
    state = schedule(plugin, handle, p, "n1")
    pv_controller(handle, bind=False)
    start = time.monotonic()
    status = plugin.pre_bind(state, p, "n1")
    assert time.monotonic() - start < 1
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "binding volumes: context deadline exceeded"
    plugin.unreserve(state, p, "n1")


def test_pre_bind_fails_when_the_provisioner_gives_the_claim_back() -> None:
    sc = storage_class("csi", provisioner="csi.example.com")
    plugin, handle = setup(claim("a", sc="csi"), sc)
    p = pod("p", "a")
    state = schedule(plugin, handle, p, "n1")

    def reschedule() -> None:
        handle.fake_api.wait_for(lambda: bool(handle.fake_api.claim_updates))
        [raw] = handle.fake_api.claim_updates
        meta = {**raw["metadata"], "resourceVersion": "9", "annotations": {"other": "x"}}
        handle.static_storage.add(parse_claim({**raw, "metadata": meta}))

    threading.Thread(target=reschedule, daemon=True).start()
    status = plugin.pre_bind(state, p, "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'binding volumes: provisioning failed for PVC "a"'


def test_pre_bind_api_failure_reverts_the_assumption() -> None:
    plugin, handle = setup(claim("a"), volume("pv", node="n1"))
    p = pod("p", "a")
    state = schedule(plugin, handle, p, "n1")
    handle.fake_api.fail_with = RuntimeError("conflict")
    status = plugin.pre_bind(state, p, "n1")
    assert status is not None and status.message() == "conflict"
    assert plugin.binder.pv_cache.get("pv").claim_ref is None
