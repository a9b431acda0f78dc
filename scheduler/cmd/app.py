"""Process wiring: config -> plugins -> profiles -> queue, cache, informers -> scheduling loop.

Mirrors kube-scheduler's `Run`: informers start (and sync) before leader election unless
delayCacheUntilActive is set, the loop starts when this process leads, and SIGTERM/SIGINT stop
everything in reverse order, flushing events and releasing the lease.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import structlog

from scheduler import __version__, gc_pauses, metrics
from scheduler.api.gang import GENERIC_WORKLOAD, GangSource
from scheduler.api.namespace import Namespace
from scheduler.api.objects import Node, Pod, PodDisruptionBudget
from scheduler.api.spread import Service, Workload
from scheduler.backend.cache import Cache, Snapshot
from scheduler.client.api import KubeApi
from scheduler.client.config import ConfigError as ClientConfigError
from scheduler.client.config import load_client_config
from scheduler.client.dra import DEVICE_TAINT_RULE, DRAInformers, unavailable_kinds
from scheduler.client.events import EventRecorder
from scheduler.client.gangs import GangInformers
from scheduler.client.informer import (
    WORKLOADS,
    Informer,
    NamespaceIndex,
    namespace_informer,
    node_informer,
    pdb_informer,
    pod_informer,
    service_informer,
    workload_informer,
)
from scheduler.client.leaderelection import LeaderElectionConfig, LeaderElector
from scheduler.client.ratelimit import TokenBucket
from scheduler.client.rest import RestClient
from scheduler.client.storage import StorageInformers
from scheduler.clock import RealClock
from scheduler.cmd import heap, memtrace, shutdown
from scheduler.cmd.auth import Authenticator, Authorizer, RequestGuard, TokenAuthenticator
from scheduler.cmd.options import Options
from scheduler.cmd.server import DebugPages, HealthServer
from scheduler.cmd.tls import TLSConfigError, server_context
from scheduler.eventhandlers import EventHandlers, PodTransform, transform_node
from scheduler.explain.record import ExplainStore
from scheduler.framework.dra import DRAManager
from scheduler.framework.events import EventResource
from scheduler.framework.gang import GangLister
from scheduler.framework.interface import StorageLister
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import (
    FrameworkError,
    FrameworkServices,
)
from scheduler.plugins.registry import full_registry
from scheduler.profiles import build_frameworks, build_queue
from scheduler.scheduler import BINDING_WORKERS, Scheduler

log = structlog.get_logger(__name__)

SYNC_TIMEOUT = 300.0
#: What an operator can do when resource.k8s.io/v1 cannot be listed (docs/operations.md).
DRA_REMEDY = (
    "serve resource.k8s.io/v1 (Kubernetes v1.34 or newer) and grant get/list/watch on "
    "resourceclaims, resourceslices, deviceclasses and devicetaintrules (the chart's "
    "ClusterRole), or run with --feature-gates=PyschedDynamicResources=false"
)
# The delegating authenticator's and authorizer's client: QPS 200, burst 400 (apiserver's
# DelegatingAuthenticationOptions.getClient), never throttled behind the scheduler's calls.
REVIEW_QPS = 200.0
REVIEW_BURST = 400

#: The cluster event each PodGroup source's changes become.
GANG_EVENT_RESOURCES = {
    GangSource.SCHEDULER_PLUGINS: EventResource.POD_GROUP,
    GangSource.KUBERNETES: EventResource.KUBE_POD_GROUP,
}


class StartupError(RuntimeError):
    """Start-up cannot go on: logged once at error level, and the process exits 1."""


@dataclass
class App:
    """Every long-lived component of one scheduler process, started and stopped in order."""

    options: Options
    registry: Registry = field(default_factory=full_registry)

    def __post_init__(self) -> None:
        """Builds the process; each step uses what the steps before it built. Nothing is
        started here (`start` does that)."""
        binding_workers = max(BINDING_WORKERS, self.options.config.parallelism)
        self._init_lifecycle_state()
        self._build_clients(binding_workers)
        self._build_cache()
        self._apply_process_policies()
        self._build_handle_informers()
        self._build_profiles()
        self._build_pod_and_node_informers()
        self._wire_event_handlers()
        self._build_scheduler(binding_workers)
        self.servers = self._build_servers()

    def _init_lifecycle_state(self) -> None:
        #: Built on a plugin's first request while plugins are built (`_storage_lister`).
        self.storage: StorageInformers | None = None
        #: Likewise (`_gang_lister`).
        self.gangs: GangInformers | None = None
        #: Likewise (`_dra_manager`): DynamicResources' informers and the claim tracker.
        self.dra: tuple[DRAInformers, DRAManager] | None = None
        self._plugins_built = False
        self.elector: LeaderElector | None = None
        self.stopped = threading.Event()
        self._informers_started = False
        self._scheduling = False
        self.lost_lease = False
        #: A StartupError raised on the elector's thread (`start_leading`), for run() to report.
        self.startup_error: StartupError | None = None

    def _build_clients(self, binding_workers: int) -> None:
        conn = self.options.config.client_connection
        self.client_config = load_client_config(
            conn.kubeconfig or None,
            master=self.options.master or None,
            qps=conn.qps,
            burst=conn.burst,
            user_agent=f"kube-pysched/{__version__}",
        )
        # Bindings, preemption calls, the dispatcher and reads share these connections: one per
        # binding worker and as many again for the rest. Keeping as many alive as can be busy at
        # once spares the API server a TLS handshake per request.
        self.rest = RestClient(self.client_config, max_connections=2 * binding_workers)
        self.api = KubeApi(self.rest)
        # Events get their own client and rate limit, as kube-scheduler's event broadcaster, and
        # as many writers as binding workers: every bound pod writes a Scheduled Event, so fewer
        # writers would leave Events to drain after the pods are bound.
        self.recorder = EventRecorder(
            KubeApi(RestClient(self.client_config, max_connections=binding_workers)),
            senders=binding_workers,
        )

    def _build_cache(self) -> None:
        self.cache = Cache()
        self.cache.export_metrics()
        self.snapshot = Snapshot()

    def _apply_process_policies(self) -> None:
        """The feature gates' metrics and the garbage collector's policy."""
        self.features = self.options.feature_gates
        metrics.apply_feature_gates(self.features)
        gc_pauses.POLICY.install()

    def _build_handle_informers(self) -> None:
        """The informers plugins read through their Handle."""
        self.pdbs: Informer[PodDisruptionBudget] = pdb_informer(self.rest)
        self.namespaces: Informer[Namespace] = namespace_informer(self.rest)
        # Selectors for PodTopologySpread's default constraints (helper.DefaultSelector).
        self.services: Informer[Service] = service_informer(self.rest)
        self._services_by_namespace = NamespaceIndex(self.services)
        self.workloads: dict[str, Informer[Workload]] = {
            kind: workload_informer(self.rest, kind) for kind in WORKLOADS
        }

    def _build_profiles(self) -> None:
        """The frameworks (their plugins may ask for the storage and PodGroup informers) and
        the queue they share."""
        config = self.options.config
        services = FrameworkServices(
            snapshot=lambda: self.snapshot,
            api=self.api,
            event_recorder=self.recorder,
            features=self.features,
            pdbs=self.pdbs.list,
            pod_lookup=lambda key: self.pods.get(key),  # noqa: PLW0108 (pods is built later)
            namespace_lookup=self.namespaces.get,
            namespace_list=self.namespaces.list,
            services=self._services_by_namespace.list,
            workload=self._workload,
            storage=self._storage_lister,
            dra=self._dra_manager,
            gangs=self._gang_lister,
            gang_members=self.cache.gang_members,
            node_now=self.cache.node_now,
            node_generation=self.cache.node_generation,
            watched_gangs=lambda: self.gangs,
        )
        self.frameworks = build_frameworks(config, self.registry, services)
        self.queue = build_queue(
            self.frameworks,
            config,
            self.features,
            self.options.pod_max_in_unschedulable_pods_duration,
        )

    def _build_pod_and_node_informers(self) -> None:
        """After the profiles: the pod informer's transform keeps what their plugins read."""
        self.pods: Informer[Pod] = pod_informer(
            self.rest,
            PodTransform(
                self.frameworks, scheduling_groups=self.features.enabled(GENERIC_WORKLOAD)
            ),
        )
        self.nodes: Informer[Node] = node_informer(self.rest, transform_node)

    def _wire_event_handlers(self) -> None:
        """Informers to cache and queue; from here on no plugin may ask for an informer."""
        handlers = EventHandlers(self.cache, self.queue, self.frameworks)
        self._plugins_built = True
        if self.storage is not None:
            for resource, informer in self.storage.informers.items():
                informer.add_event_handler(*handlers.resource_handlers(EventResource(resource)))
        if self.dra is not None:
            for resource, informer in self.dra[0].informers.items():
                # A DeviceTaintRule changes the slices the plugin reads: a slice update.
                informer.add_event_handler(
                    *handlers.update_handlers(EventResource.RESOURCE_SLICE)
                    if resource == DEVICE_TAINT_RULE
                    else handlers.resource_handlers(EventResource(resource))
                )
        if self.gangs is not None:
            for source, informer in self.gangs.informers.items():
                informer.add_event_handler(
                    *handlers.resource_handlers(GANG_EVENT_RESOURCES[source])
                )
            # Before the scheduler's handlers: a pod is a counted member by the time the
            # queue runs PreEnqueue or a QueueingHint for it.
            self.pods.add_event_handler(*self.gangs.index.handlers())
        self.nodes.add_event_handler(
            handlers.on_node_add, handlers.on_node_update, handlers.on_node_delete
        )
        self.pods.add_event_handler(
            handlers.on_pod_add, handlers.on_pod_update, handlers.on_pod_delete
        )

    def _build_scheduler(self, binding_workers: int) -> None:
        max_pods = self.options.explain_max_pods
        self.explain = ExplainStore(max_pods) if max_pods else None
        if self.explain is not None:
            self.pods.add_event_handler(on_delete=self.explain.forget)
        self.scheduler = Scheduler(
            cache=self.cache,
            queue=self.queue,
            profiles=self.frameworks,
            snapshot=self.snapshot,
            api=self.api,
            recorder=self.recorder,
            pod_lookup=self.pods.get,
            clock=RealClock(),
            percentage_of_nodes_to_score=self.options.config.percentage_of_nodes_to_score or 0,
            binding_workers=binding_workers,
            explain=self.explain,
        )

    def _build_servers(self) -> list[HealthServer]:
        """The secure port (unless --secure-port=0), then the plain loopback one (--port)."""
        servers: list[HealthServer] = []
        config = self.options.config
        secure = self.options.secure_serving
        pages = DebugPages(
            flags=self.options.flags, profiling=config.enable_profiling, explain=self.explain
        )
        try:
            if secure.port:
                # Reviews go through their own client: not fenced when the lease is lost, and
                # not throttled behind the scheduler's own calls.
                reviews = KubeApi(
                    RestClient(
                        self.client_config,
                        max_connections=4,
                        rate_limiter=TokenBucket(REVIEW_QPS, REVIEW_BURST),
                    )
                )
                guard = RequestGuard(
                    Authenticator(TokenAuthenticator(reviews, ttl=secure.token_cache_ttl)),
                    Authorizer(
                        reviews,
                        always_allow_paths=secure.always_allow_paths,
                        allowed_ttl=secure.authorized_ttl,
                        denied_ttl=secure.unauthorized_ttl,
                    ),
                )
                tls = server_context(
                    cert_file=secure.cert_file,
                    key_file=secure.key_file,
                    client_ca_file=secure.client_ca_file,
                    bind_address=secure.bind_address,
                )
                servers.append(
                    HealthServer(
                        secure.bind_address,
                        secure.port,
                        readiness=self.readiness,
                        liveness=self.liveness,
                        configz=config.to_dict,
                        tls=tls,
                        guard=guard,
                        pages=pages,
                    )
                )
            if self.options.port:
                servers.append(
                    HealthServer(
                        self.options.address,
                        self.options.port,
                        readiness=self.readiness,
                        liveness=self.liveness,
                        configz=config.to_dict,
                        pages=pages,
                    )
                )
        except BaseException:
            for server in servers:
                server.stop()
            raise
        return servers

    def _workload(self, kind: str, namespace: str, name: str) -> Workload | None:
        informer = self.workloads.get(kind)
        return informer.get(f"{namespace}/{name}") if informer is not None else None

    def _storage_lister(self) -> StorageLister:
        """The storage informers, built on a plugin's first request while plugins are built."""
        if self.storage is None:
            self._require_plugins_being_built("Handle.storage()")
            self.storage = StorageInformers(self.rest)
        return self.storage

    def _dra_manager(self) -> DRAManager:
        """The DRA informers and claim tracker, built on a plugin's first request while
        plugins are built (a profile with DynamicResources)."""
        if self.dra is None:
            self._require_plugins_being_built("Handle.dra()")
            informers = DRAInformers(
                self.rest, taint_rules=self.features.enabled("DRADeviceTaintRules")
            )
            self.dra = (informers, DRAManager(informers))
        return self.dra[1]

    def _gang_lister(self) -> GangLister:
        """The PodGroup informer, built on a plugin's first request while plugins are built."""
        if self.gangs is None:
            self._require_plugins_being_built("Handle.gangs()")
            self.gangs = GangInformers(self.rest, self.features)
        return self.gangs

    def _require_plugins_being_built(self, call: str) -> None:
        """Informers asked for by plugins are wired to the event handlers once the plugins are
        built; one asked for later would never be."""
        if self._plugins_built:
            raise RuntimeError(
                f"{call} was first called after the plugins were built; "
                "a plugin must ask for it in its constructor"
            )

    def _informers(self) -> list[Informer[Any]]:
        """Every informer, in start order (the pods last: their handlers read the rest)."""
        storage = list(self.storage.informers.values()) if self.storage is not None else []
        gangs = list(self.gangs.informers.values()) if self.gangs is not None else []
        dra = list(self.dra[0].informers.values()) if self.dra is not None else []
        return [
            self.namespaces,
            self.pdbs,
            self.services,
            *self.workloads.values(),
            *storage,
            *gangs,
            *dra,
            self.nodes,
            self.pods,
        ]

    # --- health -----------------------------------------------------------------------------

    def informers_synced(self) -> bool:
        return all(inf.has_synced() for inf in self._informers())

    def readiness(self) -> list[tuple[str, bool]]:
        """kube-scheduler's readyz: the informers synced (the loop may wait for the lease)."""
        return [("sched-handler-sync", self.informers_synced())]

    def liveness(self) -> list[tuple[str, bool]]:
        """kube-scheduler's healthz/livez: ping, and leaderElection while electing."""
        checks = [("ping", True)]
        if self.elector is not None:
            checks.append(("leaderElection", self.elector.healthy()))
        return checks

    # --- lifecycle --------------------------------------------------------------------------

    def start_informers(self) -> None:
        if self._informers_started:
            return
        self._informers_started = True
        for informer in self._informers():
            informer.start()
        for informer in self._informers():
            if not informer.wait_for_sync(SYNC_TIMEOUT):
                raise StartupError(f"timed out waiting for the {informer.name} informer to sync")
        frozen = gc_pauses.POLICY.freeze_synced_heap()
        log.info(
            "informers synced",
            frozen_objects=frozen,
            nodes=len(self.nodes.list()),
            pods=len(self.pods.list()),
            pdbs=len(self.pdbs.list()),
            namespaces=len(self.namespaces.list()),
        )

    def start_scheduling(self) -> None:
        """Runs when this process leads (or at once without leader election)."""
        self.start_informers()
        self._scheduling = True
        self.scheduler.start()
        log.info("scheduling loop started", profiles=sorted(self.frameworks))

    def start_leading(self) -> None:
        """on_started_leading, on the elector's thread: a StartupError there (informers that
        start only once the lease is won and do not sync) ends the process as one raised on the
        main thread does; it is handed to run() rather than left to the elector's thread."""
        try:
            self.start_scheduling()
        except StartupError as err:
            self.startup_error = err
            self.stopped.set()

    def fence(self) -> None:
        """Leading ended: from this moment no bind, status patch, deletion or preemption leaves
        this process (its API client is fenced) and the loop stops popping, before the lease is
        released or anyone else can take it; the process then exits (`lost_leadership`)."""
        self.rest.fence("this process is no longer the leader")
        if self._scheduling:
            self.scheduler.halt()
        log.warning("stopped leading: no more writes from this process")

    def lost_leadership(self) -> None:
        """kube-scheduler exits when it loses the lease; a replica takes over."""
        if not self.stopped.is_set():
            self.lost_lease = True
            log.error("leaderelection lost")
        self.stopped.set()

    def check_apis(self) -> None:
        """With DynamicResources built (the default), resource.k8s.io/v1 must be listable:
        kube-scheduler's informers would log the list errors and wait for a sync that never
        comes, with the scheduler never ready; kube-pysched says what is missing and exits."""
        if self.dra is None:
            return
        problems = unavailable_kinds(self.rest, self.dra[0].watches_taint_rules)
        if problems:
            raise StartupError(
                "DynamicResources cannot watch resource.k8s.io/v1: "
                + "; ".join(problems)
                + f". Exiting: {DRA_REMEDY}"
            )

    def start(self) -> None:
        self.check_apis()
        self.recorder.start()
        for server in self.servers:
            server.start()
            if server.secure:
                log.info("serving securely", address=f"{server.bind_address}:{server.port}")
            else:
                log.warning(
                    "serving plain HTTP without authentication (development only)",
                    address=f"{server.bind_address}:{server.port}",
                )
        config = self.options.config
        log.info("starting kube-pysched", version=__version__, profiles=sorted(self.frameworks))
        election = config.leader_election
        leader_elect = election.leader_elect
        if not config.delay_cache_until_active or not leader_elect:
            self.start_informers()
        if not leader_elect:
            self.start_scheduling()
            return
        identity = f"{socket.gethostname()}_{os.getpid()}_{threading.get_ident()}"
        # The lease has a client of its own (as kube-scheduler's leader-election client): the
        # scheduler's throttling and busy connections must not delay a renewal, and fencing
        # the scheduler's client must leave the lease's release possible.
        lease_api = KubeApi(RestClient(self.client_config, max_connections=2))
        self.elector = LeaderElector(
            lease_api,
            LeaderElectionConfig(
                namespace=election.resource_namespace,
                name=election.resource_name,
                identity=identity,
                lease_duration=election.lease_duration,
                renew_deadline=election.renew_deadline,
                retry_period=election.retry_period,
            ),
            on_started_leading=self.start_leading,
            on_stopped_leading=self.lost_leadership,
            fence=self.fence,
            event_recorder=self.recorder,
        )
        self.elector.start()

    def abandon(self) -> None:
        """After losing the lease: nothing in flight is waited for (kube-scheduler exits at
        once); writes are fenced already, so nothing more reaches the API server."""
        self.stopped.set()
        if self._scheduling:
            self.scheduler.halt()
        if self.elector is not None:
            self.elector.stop(timeout=1.0)
        for server in self.servers:
            server.stop()
        log.info("kube-pysched stopped after losing the lease")

    def stop(self) -> None:
        """Stops in reverse order, each step within its budget (scheduler.cmd.shutdown):
        buffered events are flushed (what cannot be sent is dropped with one line) and the
        lease released when the API server answers."""
        self.stopped.set()
        # From here a failed Event write is dropped (counted in one line), not retried, and no
        # reflector opens another watch while the rest stops.
        self.recorder.begin_stop()
        informers = self._informers()
        for informer in informers:
            informer.reflector.stop()
        if self._scheduling:
            self.scheduler.stop(timeout=shutdown.STOP_SCHEDULER)
        if self.elector is not None:
            self.elector.stop(timeout=shutdown.STOP_ELECTOR)
        shutdown.stop_all(informers, timeout=shutdown.STOP_INFORMERS)
        # Events are best effort (as client-go's broadcaster): a short flush, then exit.
        self.recorder.stop(timeout=shutdown.STOP_EVENTS)
        for server in self.servers:
            server.stop()
        gc_pauses.POLICY.release()
        log.info("kube-pysched stopped")


def run(options: Options, *, registry: Registry | None = None, install_signals: bool = True) -> int:
    """Runs until SIGTERM/SIGINT (exit 0), lost leadership or a failed start (exit 1).

    Problems found while building the process (plugin args, kubeconfig, a taken port) are
    reported in one line and exit 1 before anything is started (so are unusable TLS files).
    """
    if install_signals:
        memtrace.install_from_env()  # opt-in ($KUBE_PYSCHED_MEMTRACE_DIR), before anything is built
    try:
        app = App(options, registry if registry is not None else full_registry())
    except (FrameworkError, ClientConfigError, TLSConfigError, OSError) as err:
        # One line on stderr, as the CLI reports the config file's own errors (not a log line
        # besides: the operator reads each problem once).
        print(f"kube-pysched: {err}", file=sys.stderr)
        return 1
    watchdog = shutdown.Watchdog(app.recorder.report_unsent)
    if install_signals:

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            if app.stopped.is_set():  # a second signal: no more waiting
                log.info("received a second signal, exiting now")
                shutdown.exit_now(1)
            log.info("received signal, shutting down", signal=signal.Signals(signum).name)
            watchdog.start()
            app.stopped.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    trimmer = heap.HeapTrimmer()
    trimmer.announce()
    failed = False
    try:
        app.start()
        # The main thread has nothing else to do: between waits it hands the C heap's free
        # pages back (scheduler.cmd.heap: RSS stays flat under churn).
        while not app.stopped.wait(heap.PERIOD):
            trimmer.trim()
        if app.startup_error is not None:
            raise app.startup_error
    except StartupError as err:
        log.error(str(err))
        failed = True
    finally:
        if app.lost_lease:
            app.abandon()
        else:
            app.stop()
    code = 1 if app.lost_lease or failed else 0
    if install_signals:
        # As kube-scheduler's klog.FlushAndExit: calls stuck on an unreachable API server must
        # not hold the exit (the thread pools' atexit joins would wait for each of them).
        shutdown.exit_now(code)
    watchdog.cancel()
    return code
