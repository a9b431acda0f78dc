"""DefaultBinder: binding through the API."""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code
from scheduler.plugins import (
    default_binder,
)
from scheduler.testing import FakeHandle, build_plugin, make_pod


def test_default_binder_binds_through_the_api() -> None:
    handle = FakeHandle()
    plugin = build_plugin(default_binder.SPEC, handle=handle)
    pod = make_pod("web", namespace="prod")
    assert plugin.bind(CycleState(), pod, "n1") is None
    assert handle.fake_api.binds == {pod.key: "n1"}


def test_default_binder_returns_error_status_when_the_api_fails() -> None:
    handle = FakeHandle()
    handle.fake_api.fail_with = RuntimeError('pods "web" not found')
    plugin = build_plugin(default_binder.SPEC, handle=handle)
    status = plugin.bind(CycleState(), make_pod("web"), "n1")
    assert status.code == Code.ERROR
    assert 'pods "web" not found' in status.message()
    assert isinstance(status.error, RuntimeError)
    assert handle.fake_api.binds == {}
