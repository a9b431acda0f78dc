"""Every Prometheus metric kube-pysched exports, defined once, with kube-scheduler's names.

All metrics live in `REGISTRY` (not prometheus_client's global one) so that the HTTP server
exports exactly these and tests can read them without interference.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """As prometheus.ExponentialBuckets."""
    return [start * factor**i for i in range(count)]


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
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not "
    "be scheduled, while 'error' means an internal scheduler problem.",
    ["result", "profile"],
    registry=REGISTRY,
)
scheduling_attempt_duration = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
scheduling_algorithm_duration = Histogram(
    "scheduler_scheduling_algorithm_duration_seconds",
    "Scheduling algorithm latency in seconds",
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
pending_pods = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
    "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
    "unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the "
    "number of unschedulable pods that the scheduler never attempted to schedule because they "
    "are gated.",
    ["queue"],
    registry=REGISTRY,
)
queue_incoming_pods = Counter(
    "scheduler_queue_incoming_pods_total",
    "Number of pods added to scheduling queues by event and queue type.",
    ["queue", "event"],
    registry=REGISTRY,
)
pod_scheduling_sli_duration = Histogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue "
    "and might involve multiple scheduling attempts.",
    ["attempts"],
    buckets=exponential_buckets(0.01, 2, 20),
    registry=REGISTRY,
)
pod_scheduling_attempts = Histogram(
    "scheduler_pod_scheduling_attempts",
    "Number of attempts to successfully schedule a pod.",
    buckets=exponential_buckets(1, 2, 5),
    registry=REGISTRY,
)
framework_extension_point_duration = Histogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=exponential_buckets(0.0001, 2, 12),
    registry=REGISTRY,
)
plugin_execution_duration = Histogram(
    "scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
    registry=REGISTRY,
)
queueing_hint_execution_duration = Histogram(
    "scheduler_queueing_hint_execution_duration_seconds",
    "Duration for running a queueing hint function of a plugin.",
    ["plugin", "event", "hint"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
    registry=REGISTRY,
)
unschedulable_pods = Gauge(
    "scheduler_unschedulable_pods",
    "The number of unschedulable pods broken down by plugin name. A pod will increment the "
    "gauge for all plugins that caused it to not schedule and so this metric have meaning only "
    "when broken down by plugin.",
    ["plugin", "profile"],
    registry=REGISTRY,
)
plugin_evaluation_total = Counter(
    "scheduler_plugin_evaluation_total",
    "Number of attempts to schedule pods by each plugin and the extension point (available "
    "only in PreFilter, Filter, PreScore, and Score).",
    ["plugin", "extension_point", "profile"],
    registry=REGISTRY,
)
cache_size = Gauge(
    "scheduler_cache_size",
    "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
    ["type"],
    registry=REGISTRY,
)
event_handling_duration = Histogram(
    "scheduler_event_handling_duration_seconds",
    "Event handling latency in seconds.",
    ["event"],
    buckets=exponential_buckets(0.0001, 2, 12),
    registry=REGISTRY,
)
permit_wait_duration = Histogram(
    "scheduler_permit_wait_duration_seconds",
    "Duration of waiting on permit.",
    ["result"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
preemption_attempts = Counter(
    "scheduler_preemption_attempts_total",
    "Total preemption attempts in the cluster till now",
    registry=REGISTRY,
)
preemption_victims = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims",
    buckets=exponential_buckets(1, 2, 7),
    registry=REGISTRY,
)
preemption_goroutines_duration = Histogram(
    "scheduler_preemption_goroutines_duration_seconds",
    "Duration in seconds for running goroutines for the preemption.",
    ["result"],
    buckets=exponential_buckets(0.01, 2, 20),
    registry=REGISTRY,
)
preemption_goroutines_execution = Counter(
    "scheduler_preemption_goroutines_execution_total",
    "Number of preemption goroutines executed.",
    ["result"],
    registry=REGISTRY,
)
preemption_evaluation_duration = Histogram(
    "scheduler_preemption_evaluation_duration_seconds",
    "Duration in seconds for identifying the target preemption victims.",
    ["preemptor", "result"],
    buckets=exponential_buckets(0.001, 2, 16),
    registry=REGISTRY,
)
preemption_execution_duration = Histogram(
    "scheduler_preemption_execution_duration_seconds",
    "Duration in seconds for preempting the target preemption victims. With async preemption "
    "enabled, preemption execution does not block the scheduling of other pods.",
    ["preemptor", "result"],
    buckets=exponential_buckets(0.001, 2, 16),
    registry=REGISTRY,
)
preemption_pdb_violations = Counter(
    "scheduler_preemption_pdb_violations_total",
    "Total number of pod disruption budget violations caused by preemption.",
    ["preemptor"],
    registry=REGISTRY,
)
goroutines = Gauge(
    "scheduler_goroutines",
    "Number of running goroutines split by the work they do such as binding.",
    ["operation"],
    registry=REGISTRY,
)
goroutines_duration = Histogram(
    "scheduler_goroutines_duration_seconds",
    "Duration in seconds for running goroutines for the preemption and binding.",
    ["operation"],
    buckets=exponential_buckets(0.01, 2, 20),
    registry=REGISTRY,
)
goroutines_execution = Counter(
    "scheduler_goroutines_execution_total",
    "Number of executed goroutines by operation and result.",
    ["operation", "result"],
    registry=REGISTRY,
)
async_api_call_execution = Counter(
    "scheduler_async_api_call_execution_total",
    "Total number of API calls executed by the async dispatcher.",
    ["call_type", "result"],
    registry=REGISTRY,
)
async_api_call_duration = Histogram(
    "scheduler_async_api_call_execution_duration_seconds",
    "Duration in seconds for executing API call in the async dispatcher.",
    ["call_type", "result"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
pending_async_api_calls = Gauge(
    "scheduler_pending_async_api_calls",
    "Number of API calls currently pending in the async queue.",
    ["call_type"],
    registry=REGISTRY,
)

# client-go's REST client metrics (component-base registers them for kube-scheduler).
_REST_CLIENT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0]
rest_client_requests = Counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
    registry=REGISTRY,
)
rest_client_request_duration = Histogram(
    "rest_client_request_duration_seconds",
    "Request latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_REST_CLIENT_BUCKETS,
    registry=REGISTRY,
)
rest_client_rate_limiter_duration = Histogram(
    "rest_client_rate_limiter_duration_seconds",
    "Client side rate limiter latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_REST_CLIENT_BUCKETS,
    registry=REGISTRY,
)
events_dropped = Counter(
    "kube_pysched_events_dropped_total",
    "Events not sent because the event recorder's buffer was full.",
    registry=REGISTRY,
)
leader_election_master_status = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
    "indicates master. 'name' is the string used to identify the lease. Please make sure to "
    "group by name.",
    ["name"],
    registry=REGISTRY,
)
