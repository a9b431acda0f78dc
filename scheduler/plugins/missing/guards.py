"""Guards for kube-scheduler default plugins this build does not have yet (today only
DynamicResources).

kube-pysched's default profile is kube-scheduler's full list. A default plugin it lacks is not
dropped quietly: a guard stands in its place, under the plugin's name, and rejects in PreFilter
every pod that uses what the plugin would check (a resource claim), so such a pod stays Pending
with a message naming the missing plugin instead of being placed against a constraint nobody
checked. Pods that use none of it are scheduled as usual.
"""

from __future__ import annotations

from collections.abc import Callable
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

#: What a guard looks for in a pod: a short description of what needs the plugin, or "".
Need = Callable[[Pod, Handle], str]


def resource_claims(pod: Pod, _handle: Handle) -> str:
    return "resource claims" if pod.resource_claims else ""


#: The framework only reads a Skip status (never mutates it), so one instance serves all.
_SKIP = Status(Code.SKIP)


class MissingPluginGuard:
    """PreFilter under a missing plugin's name: rejects pods that need the plugin."""

    def __init__(self, name: str, need: Need, handle: Handle) -> None:
        self.name = name
        self._need = need
        self._handle = handle

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        what = self._need(pod, self._handle)
        if not what:
            return None, _SKIP
        return None, Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"the pod uses {what}, which the {self.name} plugin checks; kube-pysched does not "
            f"have that plugin yet",
        )

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """No cluster event makes the check possible; only the periodic flush retries."""
        return []


class DynamicResourcesGuard(MissingPluginGuard):
    """The DynamicResources guard also keeps kube-scheduler v1.37's PostFilter outcome, which
    shows in every unschedulable pod's message: DynamicResources runs its PostFilter before
    DefaultPreemption and reads the state its PreFilter wrote. When an earlier PreFilter
    rejected the pod, that state is missing: the PostFilter fails with `not found`, which ends
    PostFilter (no preemption) and becomes the message's last sentence. Otherwise it is
    Unschedulable without a reason and DefaultPreemption runs."""

    STATE_KEY = "PreFilterDynamicResources"

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
        state.write(self.STATE_KEY, True)
        return super().pre_filter(state, pod, nodes)

    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        if state.get(self.STATE_KEY) is None:
            return None, Status(Code.ERROR, "not found")
        return None, Status(Code.UNSCHEDULABLE)


def accept_any_args(raw: Any) -> Any:
    """kube-scheduler configurations that set this plugin's args load unchanged."""
    return raw
