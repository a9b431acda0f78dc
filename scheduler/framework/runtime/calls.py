"""How the runtime calls one plugin and words its failure, as kube-scheduler's frameworkImpl,
and the extension-point labels of the framework metrics."""

from __future__ import annotations

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import FilterPlugin
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo

# extension point label values (metrics)
PRE_FILTER = "PreFilter"
FILTER = "Filter"
PRE_FILTER_ADD_POD = "PreFilterExtensionAddPod"
PRE_FILTER_REMOVE_POD = "PreFilterExtensionRemovePod"
POST_FILTER = "PostFilter"
PRE_SCORE = "PreScore"
SCORE = "Score"
NORMALIZE_SCORE = "ScoreExtensionNormalize"
RESERVE = "Reserve"
UNRESERVE = "Unreserve"
PERMIT = "Permit"
PRE_BIND_PRE_FLIGHT = "PreBindPreFlight"
PRE_BIND = "PreBind"
BIND = "Bind"
POST_BIND = "PostBind"
SIGN = "Sign"


def call_filter(
    pl: FilterPlugin, state: CycleState, pod: Pod, node_info: NodeInfo
) -> Status | None:
    """One Filter plugin on one node: None when it passes, else its rejection tagged with the
    plugin, or an Error naming the plugin (also for an exception it raised)."""
    status: Status | None
    try:
        status = pl.filter(state, pod, node_info)
    except Exception as err:
        status = Status.as_error(err)
    return word_filter_status(pl.name, status)


def word_filter_status(plugin: str, status: Status | None) -> Status | None:
    """A Filter plugin's answer as the runtime returns it: None for success, a rejection
    tagged with the plugin, anything else an Error naming the plugin."""
    if status is None or status.code == Code.SUCCESS:
        return None
    if not status.is_rejected():
        status = Status(
            Code.ERROR, f"running {plugin!r} filter plugin: {status.message()}", error=status.error
        )
    status.plugin = plugin
    return status


def code_label(status: Status | None) -> str:
    return "Success" if status is None else status.code.label()


def plugin_error(point: str, plugin: str, status: Status) -> Status:
    """A plugin's failure that is not a rejection, worded as kube-scheduler words it."""
    return Status(
        Code.ERROR,
        f'running {point} plugin "{plugin}": {status.message()}',
        plugin=plugin,
        error=status.error,
    )


def rejection_or_error(point: str, plugin: str, status: Status) -> Status:
    """A rejection keeps its code and names its plugin; anything else becomes an Error."""
    return (
        status.with_plugin(plugin) if status.is_rejected() else plugin_error(point, plugin, status)
    )
