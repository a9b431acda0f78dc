"""Feature gates, with kube-scheduler's names and defaults (v1.37)."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.features_dra import DRA_DEFAULTS, DRA_LOCKED, dra_refusal

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
    # kube-pysched's own, on by default as DynamicResourceAllocation: DynamicResources is the
    # real plugin (scheduler/plugins/dynamic_resources). Off, a stand-in keeps pods with
    # resource claims Pending and nothing of resource.k8s.io is watched (docs/dra.md).
    "PyschedDynamicResources": True,
    # DynamicResources' gates (scheduler/features_dra.py, docs/dra.md "Feature gates"), with
    # DynamicResourceAllocation: GA and locked on since v1.35 (=false is refused).
    **DRA_DEFAULTS,
}


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
            if name in DRA_LOCKED and value != DEFAULTS[name]:
                raise FeatureGateError(
                    f"cannot set feature gate {name} to {str(value).lower()}, feature is "
                    f"locked to {str(DEFAULTS[name]).lower()}"
                )
            values[name] = value
        refusal = dra_refusal(values)
        if refusal is not None:
            raise FeatureGateError(refusal)
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
