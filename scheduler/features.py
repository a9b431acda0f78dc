"""Feature gates, with kube-scheduler's names and defaults (v1.37)."""

from __future__ import annotations

from collections.abc import Mapping

# name -> default. Only gates that change kube-pysched's behaviour are listed.
DEFAULTS: Mapping[str, bool] = {
    "SchedulerQueueingHints": True,
    "SchedulerPopFromBackoffQ": True,
    "SchedulerAsyncPreemption": True,
    "PodLevelResources": True,
    "InPlacePodVerticalScaling": True,
    # Beta, on by default since v1.37: NodeVolumeLimits honours CSIDriver
    # preventPodSchedulingIfMissing.
    "VolumeLimitScaling": True,
    # Beta, on by default since v1.35 (KEP-5598): a pod with the same signature as the previous
    # one may reuse its filtered and scored nodes (framework/runtime/batch.py).
    "OpportunisticBatching": True,
    # Off by default in v1.37. kube-pysched always sends status patches through its API
    # dispatcher; the gate only exports the scheduler_async_api_call_* and
    # scheduler_pending_async_api_calls families, which kube-scheduler registers with it on.
    "SchedulerAsyncAPICalls": False,
    # Beta, off by default in v1.37 (alpha since v1.35): Kubernetes' Workload API. With it on,
    # pods' spec.schedulingGroup is read and scheduling.k8s.io/v1beta1 PodGroups are watched
    # (scheduler/client/gangs.py; docs/gang.md).
    "GenericWorkload": False,
    # GA and locked on since v1.35: kube-scheduler's DynamicResources plugin and the
    # resource.k8s.io informers. Accepted as kube-scheduler accepts it (=true changes nothing,
    # =false is refused); kube-pysched's own switch below is what turns the plugin off.
    "DynamicResourceAllocation": True,
    # kube-pysched's own, on by default as DynamicResourceAllocation: DynamicResources is the
    # real plugin (scheduler/plugins/dynamic_resources). Off, a stand-in keeps pods with
    # resource claims Pending and nothing of resource.k8s.io is watched (docs/dra.md).
    "PyschedDynamicResources": True,
}

#: Gates kube-scheduler v1.37 locks to their default (LockToDefault): setting another value is
#: an error, as component-base's featuregate.Set reports it.
LOCKED_TO_DEFAULT: frozenset[str] = frozenset({"DynamicResourceAllocation"})


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


class FeatureGateError(ValueError):
    """An unknown gate or a malformed --feature-gates value."""


class FeatureGates:
    """Immutable set of gate values; unknown names and other values of a locked gate are
    rejected, as kube-scheduler does."""

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        values = dict(DEFAULTS)
        for name, value in (overrides or {}).items():
            if name not in DEFAULTS:
                known = ", ".join(sorted(DEFAULTS))
                raise FeatureGateError(f"unrecognized feature gate: {name} (known: {known})")
            if name in LOCKED_TO_DEFAULT and value != DEFAULTS[name]:
                raise FeatureGateError(
                    f"cannot set feature gate {name} to {_go_bool(value)}, feature is locked "
                    f"to {_go_bool(DEFAULTS[name])}"
                )
            values[name] = value
        self._values = values

    @classmethod
    def parse(cls, text: str) -> FeatureGates:
        """Parses "A=true,B=false" as given to --feature-gates."""
        overrides: dict[str, bool] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, sep, raw = item.partition("=")
            if not sep or raw.lower() not in ("true", "false"):
                raise FeatureGateError(
                    f"invalid value of {item!r} in --feature-gates: expected Name=true|false"
                )
            overrides[name.strip()] = raw.lower() == "true"
        return cls(overrides)

    def enabled(self, name: str) -> bool:
        return self._values[name]

    def as_dict(self) -> dict[str, bool]:
        return dict(self._values)
