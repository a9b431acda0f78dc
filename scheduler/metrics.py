"""Every Prometheus metric kube-pysched exports, defined once, with kube-scheduler's names.

All metrics live in `REGISTRY` (not prometheus_client's global one) so that the HTTP server
exports exactly these and tests can read them without interference. Help strings carry the
stability level prefix component-base adds ("[ALPHA] ..."), so HELP lines read as
kube-scheduler's. Families kube-scheduler registers only with a feature gate on are in GATED and
exported by apply_feature_gates (the defaults at import; the configured gates at start-up).
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.registry import Collector


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """As prometheus.ExponentialBuckets."""
    return [start * factor**i for i in range(count)]


# kube-scheduler (client_golang) exports no `_created` series; prometheus_client does unless
# told not to (process-wide).
disable_created_metrics()  # type: ignore[no-untyped-call]

REGISTRY = CollectorRegistry(auto_describe=True)

# Label values kube-scheduler uses.
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"
ACTIVE_Q = "active"
BACKOFF_Q = "backoff"
UNSCHEDULABLE_Q = "unschedulable"
GATED_Q = "gated"
GOROUTINE_SUCCESS = "success"
GOROUTINE_ERROR = "error"

schedule_attempts = Counter(
    "scheduler_schedule_attempts_total",
    "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
    "could not be scheduled, while 'error' means an internal scheduler problem.",
    ["result", "profile"],
    registry=REGISTRY,
)
scheduling_attempt_duration = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
scheduling_algorithm_duration = Histogram(
    "scheduler_scheduling_algorithm_duration_seconds",
    "[BETA] Scheduling algorithm latency in seconds",
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
pending_pods = Gauge(
    "scheduler_pending_pods",
    "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
    "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
    "unschedulableEntities that the scheduler attempted to schedule and failed; 'gated' is the "
    "number of unschedulable pods that the scheduler never attempted to schedule because they "
    "are gated; 'incomplete' means number of pods in incompletePodGroupPods; 'pending' means "
    "number of pods in pendingPodGroupPods.",
    ["queue"],
    registry=REGISTRY,
)
queue_incoming_pods = Counter(
    "scheduler_queue_incoming_pods_total",
    "[STABLE] Number of pods added to scheduling queues by event and queue type.",
    ["queue", "event"],
    registry=REGISTRY,
)
pod_scheduling_sli_duration = Histogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "[BETA] E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
    "queue and might involve multiple scheduling attempts.",
    ["attempts"],
    buckets=exponential_buckets(0.01, 2, 20),
    registry=REGISTRY,
)
pod_scheduling_attempts = Histogram(
    "scheduler_pod_scheduling_attempts",
    "[STABLE] Number of attempts to successfully schedule a pod.",
    buckets=exponential_buckets(1, 2, 5),
    registry=REGISTRY,
)
framework_extension_point_duration = Histogram(
    "scheduler_framework_extension_point_duration_seconds",
    "[STABLE] Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=exponential_buckets(0.0001, 2, 12),
    registry=REGISTRY,
)
plugin_execution_duration = Histogram(
    "scheduler_plugin_execution_duration_seconds",
    "[BETA] Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
    registry=REGISTRY,
)
queueing_hint_execution_duration = Histogram(
    "scheduler_queueing_hint_execution_duration_seconds",
    "[ALPHA] Duration for running a queueing hint function of a plugin.",
    ["plugin", "event", "hint"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
    registry=REGISTRY,
)
unschedulable_pods = Gauge(
    "scheduler_unschedulable_pods",
    "[BETA] The number of unschedulable pods broken down by plugin name. A pod will increment the "
    "gauge for all plugins that caused it to not schedule and so this metric have meaning only "
    "when broken down by plugin.",
    ["plugin", "profile"],
    registry=REGISTRY,
)
plugin_evaluation_total = Counter(
    "scheduler_plugin_evaluation_total",
    "[BETA] Number of attempts to schedule pods by each plugin and the extension point (available "
    "only in PreFilter, Filter, PreScore, and Score).",
    ["plugin", "extension_point", "profile"],
    registry=REGISTRY,
)
cache_size = Gauge(
    "scheduler_cache_size",
    "[ALPHA] Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
    ["type"],
    registry=REGISTRY,
)
event_handling_duration = Histogram(
    "scheduler_event_handling_duration_seconds",
    "[ALPHA] Event handling latency in seconds.",
    ["event"],
    buckets=exponential_buckets(0.0001, 2, 12),
    registry=REGISTRY,
)
permit_wait_duration = Histogram(
    "scheduler_permit_wait_duration_seconds",
    "[BETA] Duration of waiting on permit.",
    ["result"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
preemption_attempts = Counter(
    "scheduler_preemption_attempts_total",
    "[STABLE] Total preemption attempts in the cluster till now",
    registry=REGISTRY,
)
preemption_victims = Histogram(
    "scheduler_preemption_victims",
    "[STABLE] Number of selected preemption victims for preemption initiated by a single pod",
    buckets=exponential_buckets(1, 2, 7),
    registry=REGISTRY,
)
goroutines = Gauge(
    "scheduler_goroutines",
    "[BETA] Number of running goroutines split by the work they do such as binding.",
    ["operation"],
    registry=REGISTRY,
)
inflight_events = Gauge(
    "scheduler_inflight_events",
    "[ALPHA] Number of events currently tracked in the scheduling queue.",
    ["event"],
    registry=REGISTRY,
)
pod_scheduled_after_flush = Counter(
    "scheduler_pod_scheduled_after_flush_total",
    "[ALPHA] Number of pods that were successfully scheduled after being flushed from "
    "unschedulableEntities due to timeout. This metric helps detect potential queueing hint "
    "misconfigurations or event handling issues.",
    registry=REGISTRY,
)
queued_entities = Gauge(
    "scheduler_queued_entities",
    "[ALPHA] Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands for "
    "individual pods that are not members of any podgroup) by the queue type. 'active' means "
    "number of entities in activeQ; 'backoff' means number of entities in backoffQ; "
    "'unschedulable' means number of entities in unschedulableEntities that the scheduler "
    "attempted to schedule and failed; 'gated' is the number of unschedulable entities that "
    "the scheduler never attempted to schedule because they are gated.",
    ["queue", "type"],
    registry=REGISTRY,
)
queue_incoming_entities = Counter(
    "scheduler_queue_incoming_entities_total",
    "[ALPHA] Number of scheduling entities added to scheduling queues by event, queue type, and "
    "entity type. Entity types are either 'pod' (for individual pods that are not members of "
    "any podgroup) or 'podgroup'.",
    ["queue", "event", "type"],
    registry=REGISTRY,
)
# The label value of `type` in queued_entities / queue_incoming_entities (no pod groups here).
POD_ENTITY = "pod"
# The `event` label of inflight_events for the pods themselves (metrics.PodPoppedInFlightEvent).
POD_POPPED_IN_FLIGHT_EVENT = "PodPopped"

# --- registered only with their feature gate on (kube-scheduler's metrics.Register) -------
# Observed unconditionally (a child of an unregistered family costs the same), exported only
# once apply_feature_gates() has registered them.

# SchedulerAsyncPreemption.
preemption_goroutines_execution = Counter(
    "scheduler_preemption_goroutines_execution_total",
    "[ALPHA] Number of preemption goroutines executed.",
    ["result"],
    registry=None,
)
# Deprecated in v1.37.0 and, as an ALPHA metric, hidden from v1.37 on: kube-scheduler exports
# it only with --show-hidden-metrics-for-version=1.36, which kube-pysched does not have.
preemption_goroutines_duration = Histogram(
    "scheduler_preemption_goroutines_duration_seconds",
    "[ALPHA] (Deprecated since 1.37.0) Duration in seconds for running goroutines for the "
    "preemption.",
    ["result"],
    buckets=exponential_buckets(0.01, 2, 20),
    registry=None,
)
# GenericWorkload.
preemption_evaluation_duration = Histogram(
    "scheduler_preemption_evaluation_duration_seconds",
    "[ALPHA] Duration in seconds for identifying the target preemption victims.",
    ["preemptor", "result"],
    buckets=exponential_buckets(0.001, 2, 16),
    registry=None,
)
preemption_execution_duration = Histogram(
    "scheduler_preemption_execution_duration_seconds",
    "[ALPHA] Duration in seconds for preempting the target preemption victims. With async "
    "preemption enabled, preemption execution does not block the scheduling of other pods.",
    ["preemptor", "result"],
    buckets=exponential_buckets(0.001, 2, 16),
    registry=None,
)
# Victims of a pod group's preemption (the group cycle's PostFilter); a single pod's go to
# preemption_victims. kube-scheduler observes one or the other per preemption, by preemptor type.
workload_preemption_victims = Histogram(
    "scheduler_workload_preemption_victims",
    "[ALPHA] Number of pod preemption victims caused by workload preemption.",
    buckets=exponential_buckets(1, 2, 11),
    registry=None,
)
preemption_pdb_violations = Counter(
    "scheduler_preemption_pdb_violations_total",
    "[ALPHA] Total number of pod disruption budget violations caused by preemption.",
    ["preemptor"],
    registry=None,
)
# Opportunistic batching (KEP-5598); registered whatever the gate, as kube-scheduler does, but
# only observed with OpportunisticBatching on.
BATCH_NO_HINT = "no_hint"
BATCH_HINT_USED = "hint_used"
BATCH_HINT_NOT_USED = "hint_not_used"
batch_attempts = Counter(
    "scheduler_batch_attempts_total",
    "[ALPHA] Counts of results when we attempt to use batching.",
    ["profile", "result"],
    registry=REGISTRY,
)
batch_cache_flushed = Counter(
    "scheduler_batch_cache_flushed_total",
    "[ALPHA] Counts of cache flushes by reason.",
    ["profile", "reason"],
    registry=REGISTRY,
)
batch_rescore_attempts = Counter(
    "scheduler_batch_rescore_attempts_total",
    "[ALPHA] Counts of rescore attempts during opportunistic batching.",
    ["profile"],
    registry=REGISTRY,
)
get_node_hint_duration = Histogram(
    "scheduler_get_node_hint_duration_seconds",
    "[ALPHA] Latency for getting a node hint.",
    ["hinted", "profile"],
    buckets=exponential_buckets(0.00001, 2, 12),
    registry=REGISTRY,
)
store_schedule_results_duration = Histogram(
    "scheduler_store_schedule_results_duration_seconds",
    "[ALPHA] Latency for storing scheduling results.",
    ["profile"],
    buckets=exponential_buckets(0.00001, 2, 12),
    registry=REGISTRY,
)
batch_rescore_duration = Histogram(
    "scheduler_batch_rescore_duration_seconds",
    "[ALPHA] Latency for rescoring a node during opportunistic batching.",
    ["profile"],
    buckets=exponential_buckets(0.00001, 2, 12),
    registry=REGISTRY,
)
# GenericWorkload: kube-scheduler's pod group cycle, recorded by the group cycle for
# scheduling.k8s.io/v1beta1 PodGroups (GangScheduling).
podgroup_schedule_attempts = Counter(
    "scheduler_podgroup_schedule_attempts_total",
    "[ALPHA] Number of attempts to schedule pod group, by the result. 'unschedulable' means a "
    "pod group could not be scheduled, while 'error' means an internal scheduler problem.",
    ["result", "profile"],
    registry=None,
)
podgroup_scheduling_attempt_duration = Histogram(
    "scheduler_podgroup_scheduling_attempt_duration_seconds",
    "[ALPHA] Pod group scheduling attempt latency in seconds",
    ["result", "profile"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=None,
)
podgroup_scheduling_algorithm_duration = Histogram(
    "scheduler_podgroup_scheduling_algorithm_duration_seconds",
    "[ALPHA] Pod group scheduling algorithm latency in seconds",
    buckets=exponential_buckets(0.001, 2, 15),
    registry=None,
)
# DRAExtendedResource (GA, locked on in v1.37): k8s.io/dynamic-resource-allocation's family,
# shared with kube-controller-manager; the scheduler counts the claims it creates for pods'
# extended resources backed by DRA.
resourceclaim_creates = Counter(
    "dynamic_resource_allocation_resourceclaim_creates_total",
    "[ALPHA] Number of ResourceClaims creation requests, categorized by creation status, admin "
    "access, and owning API group and kind (either Pod or scheduling.k8s.io/PodGroup)",
    ["status", "admin_access", "owner_api_group", "owner_api_kind"],
    registry=REGISTRY,
)
# SchedulerAsyncAPICalls.
async_api_call_execution = Counter(
    "scheduler_async_api_call_execution_total",
    "[ALPHA] Total number of API calls executed by the async dispatcher.",
    ["call_type", "result"],
    registry=None,
)
async_api_call_duration = Histogram(
    "scheduler_async_api_call_execution_duration_seconds",
    "[ALPHA] Duration in seconds for executing API call in the async dispatcher.",
    ["call_type", "result"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=None,
)
pending_async_api_calls = Gauge(
    "scheduler_pending_async_api_calls",
    "[ALPHA] Number of API calls currently pending in the async queue.",
    ["call_type"],
    registry=None,
)

#: Feature gate -> the families exported only while it is on.
GATED: dict[str, tuple[Collector, ...]] = {
    "SchedulerAsyncPreemption": (preemption_goroutines_execution,),
    "SchedulerAsyncAPICalls": (
        async_api_call_execution,
        async_api_call_duration,
        pending_async_api_calls,
    ),
    "GenericWorkload": (
        preemption_evaluation_duration,
        preemption_execution_duration,
        preemption_pdb_violations,
        workload_preemption_victims,
        podgroup_schedule_attempts,
        podgroup_scheduling_attempt_duration,
        podgroup_scheduling_algorithm_duration,
    ),
}


class _Gates(Protocol):
    def enabled(self, name: str) -> bool: ...


class _Defaults:
    """The default gates without importing scheduler.features (kept free of dependencies)."""

    def enabled(self, name: str) -> bool:
        from scheduler.features import DEFAULTS

        return DEFAULTS.get(name, False)


_registered_gated: set[str] = set()


def apply_feature_gates(gates: _Gates) -> None:
    """Exports the gated families whose gate is on and withdraws the others (idempotent).

    A gate unknown to `gates` counts as off."""
    for gate, collectors in GATED.items():
        try:
            on = gates.enabled(gate)
        except KeyError:
            on = False
        if on and gate not in _registered_gated:
            for collector in collectors:
                REGISTRY.register(collector)
            _registered_gated.add(gate)
        elif not on and gate in _registered_gated:
            for collector in collectors:
                REGISTRY.unregister(collector)
            _registered_gated.discard(gate)


# client-go's REST client metrics (component-base registers them for kube-scheduler).
_REST_CLIENT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0]
rest_client_requests = Counter(
    "rest_client_requests_total",
    "[ALPHA] Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
    registry=REGISTRY,
)
rest_client_request_duration = Histogram(
    "rest_client_request_duration_seconds",
    "[ALPHA] Request latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_REST_CLIENT_BUCKETS,
    registry=REGISTRY,
)
rest_client_rate_limiter_duration = Histogram(
    "rest_client_rate_limiter_duration_seconds",
    "[ALPHA] Client side rate limiter latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_REST_CLIENT_BUCKETS,
    registry=REGISTRY,
)
_REST_CLIENT_SIZE_BUCKETS = [
    64.0,
    256.0,
    512.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262144.0,
    1048576.0,
    4194304.0,
    16777216.0,
]
rest_client_request_size = Histogram(
    "rest_client_request_size_bytes",
    "[ALPHA] Request size in bytes. Broken down by verb and host.",
    ["verb", "host"],
    buckets=_REST_CLIENT_SIZE_BUCKETS,
    registry=REGISTRY,
)
rest_client_response_size = Histogram(
    "rest_client_response_size_bytes",
    "[ALPHA] Response size in bytes. Broken down by verb and host.",
    ["verb", "host"],
    buckets=_REST_CLIENT_SIZE_BUCKETS,
    registry=REGISTRY,
)
rest_client_request_retries = Counter(
    "rest_client_request_retries_total",
    "[ALPHA] Number of request retries, partitioned by status code, verb, and host.",
    ["code", "verb", "host"],
    registry=REGISTRY,
)
events_dropped = Counter(
    "kube_pysched_events_dropped_total",
    "Events not sent because the event recorder's buffer was full.",
    registry=REGISTRY,
)
# The group cycle (docs/gang.md); upstream has no metrics for Coscheduling.
gang_attempts = Counter(
    "kube_pysched_gang_attempts_total",
    "Group cycles (all pending members of a pod group scheduled in one step), by the result: "
    "'scheduled' when the group reached minMember, 'unschedulable' when it did not and every "
    "placement was reverted, 'error' when a member's attempt failed with an error.",
    ["result"],
    registry=REGISTRY,
)
gang_attempt_duration = Histogram(
    "kube_pysched_gang_attempt_duration_seconds",
    "Group cycle latency in seconds: every member's algorithm, assume and Reserve, then Permit "
    "and the start of binding, or the reverts and failure handling.",
    ["result"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
gang_members_per_attempt = Histogram(
    "kube_pysched_gang_members_per_attempt",
    "Pending members a group cycle attempted to place.",
    buckets=exponential_buckets(1, 2, 11),
    registry=REGISTRY,
)
gang_wait = Histogram(
    "kube_pysched_gang_wait_seconds",
    "How long a pod group waited to be placed: from the first attempt of the earliest member "
    "of its successful group cycle to that cycle (a gang's members never wait at Permit for "
    "each other: they reach it together).",
    buckets=exponential_buckets(0.01, 2, 20),
    registry=REGISTRY,
)
gang_groups_waiting = Gauge(
    "kube_pysched_gang_groups_waiting",
    "Pod groups whose last group cycle ended below minMember (or waits for its preemption) "
    "and that still have pending members.",
    registry=REGISTRY,
)
gc_pause = Histogram(
    "kube_pysched_gc_pause_seconds",
    "How long each garbage collection of the Python interpreter held the process (every "
    "thread waits for it), by generation: a full collection (2) walks every tracked object.",
    ["generation"],
    buckets=exponential_buckets(0.0001, 2, 16),
    registry=REGISTRY,
)
leader_election_master_status = Gauge(
    "leader_election_master_status",
    "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates "
    "backup, 1 indicates master. 'name' is the string used to identify the lease. Please make "
    "sure to group by name.",
    ["name"],
    registry=REGISTRY,
)

# The process families client_golang's process collector exports for kube-scheduler
# (process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds, ...; Linux only,
# nothing elsewhere): the dashboard's CPU and memory panels.
ProcessCollector(registry=REGISTRY)

apply_feature_gates(_Defaults())
