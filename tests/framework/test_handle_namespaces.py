"""The Handle serves namespaces from the services the app wires to the namespace informer."""

from __future__ import annotations

from scheduler.api.namespace import Namespace
from scheduler.features import FeatureGates
from scheduler.framework.runtime import Framework, FrameworkServices
from scheduler.testing import FakeApi, FakeRecorder
from scheduler.testing.handle import make_snapshot
from scheduler.testing.harness import profile_spec, registry


def test_namespace_labels_and_list_come_from_the_services() -> None:
    known = {"team-a": Namespace("team-a", {"team": "a"})}
    snap = make_snapshot()
    services = FrameworkServices(
        snapshot=lambda: snap,
        api=FakeApi(),
        event_recorder=FakeRecorder(),
        features=FeatureGates(),
        namespace_lookup=known.get,
        namespace_list=lambda: list(known.values()),
    )
    fwk = Framework(profile_spec(), registry(), services)
    assert fwk.namespace_labels("team-a") == {"team": "a"}
    assert fwk.namespace_labels("missing") is None
    assert fwk.namespaces() == [Namespace("team-a", {"team": "a"})]
