"""DynamicResources switched off (`--feature-gates=PyschedDynamicResources=false`): the stand-in
registered under the plugin's name, so a pod with resource claims is never placed against
claims nobody checked. It rejects such a pod in PreFilter, UnschedulableAndUnresolvable, with a
message naming the plugin and the switch; every other pod passes untouched. Nothing of
resource.k8s.io is read (the stand-in never calls Handle.dra()).

It keeps kube-scheduler's PostFilter outcome, which shows in every unschedulable pod's message:
DynamicResources runs its PostFilter before DefaultPreemption and reads the state its PreFilter
wrote. When an earlier PreFilter rejected the pod, that state is missing: the PostFilter fails
with `not found`, which ends PostFilter (no preemption) and becomes the message's last
sentence. Otherwise it is Unschedulable without a reason and DefaultPreemption runs.
"""

from __future__ import annotations

from typing import Any

from scheduler.framework import (
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NodeToStatus,
    Pod,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterResult,
    SignFragment,
    Status,
)

NAME = "DynamicResources"
#: kube-pysched's feature gate that picks the real plugin (on, the default) or this stand-in.
SWITCH = "PyschedDynamicResources"
SWITCHED_OFF = (
    f"the pod uses resource claims, which the {NAME} plugin checks; it is switched off in this "
    f"kube-pysched (--feature-gates={SWITCH}=false)"
)
_STATE_KEY = "PreFilterDynamicResources"
#: The framework only reads a Skip status (never mutates it), so one instance serves all.
_SKIP = Status(Code.SKIP)


class DynamicResourcesSwitchedOff:
    """PreFilter, PostFilter and SignPod under DynamicResources' name, without the plugin."""

    name = NAME

    def __init__(self, _args: Any, _handle: Handle) -> None:
        pass

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """As DynamicResources: pods with resource claims are never signed."""
        if pod.resource_claims:
            return None, Status(
                Code.UNSCHEDULABLE, "pods with dra resource claims are not signable"
            )
        return None, None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(_STATE_KEY, True)
        if not pod.resource_claims:
            return None, _SKIP
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, SWITCHED_OFF)

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        if state.get(_STATE_KEY) is None:
            return None, Status(Code.ERROR, "not found")
        return None, Status(Code.UNSCHEDULABLE)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """No cluster event makes the check possible; only the periodic flush retries."""
        return []
