"""A real, local Kubernetes control plane made of upstream processes on 127.0.0.1.

etcd -> kube-apiserver -> kube-controller-manager + kube-scheduler + kwok, each with its own
log file, certificates from a per-run CA, free ports chosen at start (so several control
planes can run side by side) and readiness awaited by polling with deadlines.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import yaml

from e2e.cluster import kwok
from e2e.cluster.build import bin_dir_for, build, cache_root
from e2e.cluster.certs import FRONT_PROXY_CLIENT, SERVICE_CLUSTER_IP_RANGE, Pki, generate_pki
from e2e.cluster.kubeconfig import write_kubeconfig
from e2e.cluster.ports import LOOPBACK, PortReservation
from e2e.cluster.processes import ManagedProcess, stop_all
from e2e.cluster.readiness import probe, tls_context, wait_default_service_account, wait_for
from e2e.cluster.state import ClusterState, save

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

#: Kubernetes' service-account issuer inside the simulated cluster.
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

#: How long the node lifecycle controller tolerates a silent node. kwok renews Leases every
#: 10 s; the generous grace keeps nodes Ready even when a benchmark saturates both cores.
NODE_MONITOR_GRACE_PERIOD = "120s"
#: The benchmark's: with 5000 fake nodes on two busy cores kwok falls minutes behind on Lease
#: renewals, and at 120 s the controller tainted up to 1 600 nodes unreachable mid-run, which
#: re-preempted nominated pods. scheduler_perf runs no node lifecycle controller at all; this
#: one still lifts the not-ready taint of new nodes. It must outlast
#: BENCH_NODE_LEASE_DURATION_SECONDS' renewal interval (a quarter of it).
BENCH_NODE_MONITOR_GRACE_PERIOD = "2h"
#: The benchmark's node Lease duration: kwok renews each Lease once an hour, so no renewal
#: falls inside a run (every run has a control plane of its own, up for well under an hour).
#: With 40 s Leases kwok wrote 100 renewals a second at 1000 nodes and up to 500 at 5000, as
#: many API-server writes as the scheduler's, and how many fell in each scheduler's window
#: differed by up to 10x; scheduler_perf's nodes have no Leases at all.
BENCH_NODE_LEASE_DURATION_SECONDS = 4 * 3600

#: Health endpoints of kube-controller-manager / kube-scheduler readable without credentials.
ALWAYS_ALLOW_PATHS = "/healthz,/readyz,/livez,/metrics"

# Start order; stop runs in reverse so clients leave before the apiserver and etcd.
_ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


class ProcessDiedError(RuntimeError):
    """A control-plane process exited while it was expected to run."""


@dataclass
class SchedulerHandle:
    """An extra kube-scheduler started by :meth:`ControlPlane.start_scheduler`."""

    process: ManagedProcess
    port: int
    config_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def name(self) -> str:
        return self.process.name

    @property
    def metrics_url(self) -> str:
        """Prometheus metrics (served over TLS by our CA; no client credentials needed)."""
        return f"https://{LOOPBACK}:{self.port}/metrics"

    def alive(self) -> bool:
        return self.process.alive()

    def stop(self, timeout: float = 15.0) -> None:
        self.process.stop(timeout)

    def tail(self, lines: int = 40) -> str:
        return self.process.tail(lines)


class ControlPlane:
    """Start/stop a local control plane; usable as a context manager.

    ``workdir=None`` creates a run directory under the cache (removed again on ``stop`` unless
    $KUBE_PYSCHED_KEEP_RUNS is set). ``with_scheduler`` runs kube-scheduler as the default
    scheduler. ``detached`` lets the processes outlive this Python process (CLI ``up``).
    ``prompt_pod_deletion`` makes kwok remove a deleted pod at once instead of after its grace
    period (see kwok.stages_text). ``feature_gates`` (e.g. ``{"GenericWorkload": True}``) go
    to kube-apiserver, kube-controller-manager and the control plane's kube-scheduler as
    ``--feature-gates``, and are the default of :meth:`start_scheduler`; ``runtime_config``
    (e.g. ``{"scheduling.k8s.io/v1beta1": "true"}``) goes to kube-apiserver as
    ``--runtime-config``. Both empty by default: the components' own defaults.
    """

    def __init__(
        self,
        workdir: Path | str | None = None,
        with_scheduler: bool = True,
        *,
        bin_dir: Path | str | None = None,
        detached: bool = False,
        start_timeout: float = 180.0,
        prompt_pod_deletion: bool = False,
        feature_gates: Mapping[str, bool] | None = None,
        runtime_config: Mapping[str, str] | None = None,
        node_monitor_grace_period: str = NODE_MONITOR_GRACE_PERIOD,
        node_lease_duration_seconds: int = kwok.NODE_LEASE_DURATION_SECONDS,
    ) -> None:
        self._own_workdir = workdir is None
        self.node_monitor_grace_period = node_monitor_grace_period
        self.node_lease_duration_seconds = node_lease_duration_seconds
        self.feature_gates: dict[str, bool] = dict(feature_gates or {})
        self.runtime_config: dict[str, str] = dict(runtime_config or {})
        self.prompt_pod_deletion = prompt_pod_deletion
        self._workdir = Path(workdir).resolve() if workdir is not None else None
        self.with_scheduler = with_scheduler
        self._bin_dir = Path(bin_dir) if bin_dir is not None else None
        self.detached = detached
        self.start_timeout = start_timeout
        self._procs: dict[str, ManagedProcess] = {}
        self._schedulers: dict[str, SchedulerHandle] = {}
        self._ports: dict[str, int] = {}
        self._pki: Pki | None = None
        self._reservation = PortReservation()
        self._started = False
        #: Seconds the last start() took from generating certificates to everything ready.
        self.startup_seconds = 0.0

    # --- public properties --------------------------------------------------------------

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            runs = cache_root() / "runs"
            runs.mkdir(parents=True, exist_ok=True)
            self._workdir = Path(tempfile.mkdtemp(prefix="run-", dir=runs))
        return self._workdir

    @property
    def bin_dir(self) -> Path:
        return self._bin_dir if self._bin_dir is not None else bin_dir_for()

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (user in system:masters) for tests and kubectl."""
        return self.workdir / "kubeconfig"

    @property
    def scheduler_kubeconfig(self) -> Path:
        """kube-scheduler's kubeconfig (user system:kube-scheduler): what the control plane's
        schedulers run as, for another scheduler that should meet the API server as they do
        (RBAC, priority and fairness)."""
        return self._config_dir / "kube-scheduler.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://{LOOPBACK}:{self._ports['apiserver']}"

    @property
    def ports(self) -> dict[str, int]:
        return dict(self._ports)

    @property
    def processes(self) -> dict[str, ManagedProcess]:
        """Every process started so far (core components and extra schedulers), by name."""
        procs = dict(self._procs)
        procs.update({name: h.process for name, h in self._schedulers.items()})
        return procs

    @property
    def pids(self) -> dict[str, int]:
        """pid by process name, e.g. for measuring CPU/RSS of kube-scheduler."""
        return {name: p.pid for name, p in self.processes.items()}

    @property
    def ca_cert(self) -> Path:
        return self._require_pki().ca.cert

    def pid(self, name: str) -> int:
        return self.processes[name].pid

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> ControlPlane:
        """Build if needed, then start and wait for every component; cleans up on failure."""
        if self._started:
            return self
        if self._bin_dir is None:
            self._bin_dir = build()
        self._started = True
        if not self.detached:
            atexit.register(self._atexit)
        try:
            self._start()
        except BaseException as exc:
            logs = self.tail_logs(30)
            self.stop(remove_workdir=False)
            if isinstance(exc, Exception):
                raise RuntimeError(
                    f"control plane failed to start ({exc}); run dir {self.workdir}\n{logs}"
                ) from exc
            raise
        return self

    def stop(self, remove_workdir: bool | None = None) -> None:
        """Stop every process this object started, by pid: clients, then apiserver, then etcd."""
        with contextlib.suppress(Exception):
            atexit.unregister(self._atexit)
        stop_all([h.process for h in self._schedulers.values()])
        for group in (("kwok", "kube-scheduler", "kube-controller-manager"), ("kube-apiserver",)):
            stop_all([self._procs[n] for n in group if n in self._procs])
        stop_all([self._procs[n] for n in ("etcd",) if n in self._procs])
        self._reservation.release()
        if remove_workdir is None:
            remove_workdir = self._own_workdir and not os.environ.get("KUBE_PYSCHED_KEEP_RUNS")
        if remove_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._started = False

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _atexit(self) -> None:
        self.stop()

    # --- extra schedulers ---------------------------------------------------------------

    def start_scheduler(
        self,
        config: str | Path | Mapping[str, Any],
        *,
        name: str | None = None,
        timeout: float = 60.0,
        extra_args: Sequence[str] = (),
        cpus: Iterable[int] | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        binary: str | Path | None = None,
    ) -> SchedulerHandle:
        """Run another kube-scheduler with a KubeSchedulerConfiguration (YAML text, file or dict).

        Missing ``clientConnection.kubeconfig`` is filled in with the scheduler identity and
        leader election defaults to off (it would otherwise contend for the same Lease as the
        default scheduler). ``cpus`` starts it pinned to those CPUs. ``feature_gates`` are its
        ``--feature-gates``; None (the default) gives it the control plane's, ``{}`` none.
        ``binary`` runs another build of kube-scheduler (e.g. scheduler-plugins') with the same
        flags. Returns once /readyz answers ok: in kube-scheduler that includes
        `sched-handler-sync` (its informers listed and every listed object handed to its event
        handlers), so the scheduler has its caches, as kube-pysched has when its /readyz
        answers (/healthz answers before either has listed anything).
        """
        pki = self._require_pki()
        name = name or f"kube-scheduler-{len(self._schedulers) + 1}"
        if name in self.processes:
            raise ValueError(f"a process named {name!r} already exists")
        doc = _load_scheduler_config(config)
        doc.setdefault("clientConnection", {}).setdefault(
            "kubeconfig", str(self.scheduler_kubeconfig)
        )
        doc.setdefault("leaderElection", {}).setdefault("leaderElect", False)
        config_path = self._config_dir / f"{name}.yaml"
        config_path.write_text(yaml.safe_dump(doc, sort_keys=False))
        port = self._reservation.take()
        gates = self.feature_gates if feature_gates is None else feature_gates
        argv = self._scheduler_argv(
            config_path, port, pki, [*feature_gate_flags(gates), *extra_args]
        )
        if binary is not None:
            argv[0] = str(binary)
        proc = self._spawn(name, argv, cpus=cpus)
        handle = SchedulerHandle(proc, port, config_path)
        self._schedulers[name] = handle
        try:
            self._wait_https(name, port, "/readyz", timeout, proc)
        finally:
            self._reservation.release(port)
        return handle

    def restart_apiserver(self, down_seconds: float = 0.0, await_controllers: bool = True) -> None:
        """Stop kube-apiserver (SIGTERM, by pid), optionally stay down, start it again on the
        same port with the same flags, and wait until it is ready (and, unless told not to,
        until kube-controller-manager works again: ``await_controllers``). Clients see the
        outage that a rolling control-plane upgrade causes."""
        pki = self._require_pki()
        old = self._procs["kube-apiserver"]
        old.stop()
        if down_seconds > 0:
            time.sleep(down_seconds)  # the outage itself, not synchronisation
        self._spawn("kube-apiserver", self._apiserver_argv(pki))
        admin = tls_context(pki.ca.cert, pki.clients["admin"].cert, pki.clients["admin"].key)
        wait_for(
            lambda: probe(f"{self.server}/readyz", admin),
            timeout=self.start_timeout,
            what="kube-apiserver after restart",
            guard=self._guard,
        )
        if await_controllers:
            self.await_controllers()

    def await_controllers(self) -> None:
        """Return once kube-controller-manager acts on new objects again.

        Its informers reconnect after an API server restart with client-go's backoff (2-41 s
        measured here), so a namespace created right after the restart can wait longer than
        a test's 60 s for its ``default`` ServiceAccount (CI failed so at stop 22). A probe
        namespace's ServiceAccount proves the namespace and ServiceAccount informers are back."""
        from kubernetes import client as k8s

        api = self.api_client()
        try:
            core = k8s.CoreV1Api(api)
            name = f"restart-probe-{os.urandom(3).hex()}"
            core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
            try:
                wait_default_service_account(
                    core,
                    name,
                    timeout=self.start_timeout,
                    what=f"kube-controller-manager after the API server restart ({name})",
                    guard=self._guard,
                )
            finally:
                core.delete_namespace(name)
        finally:
            api.close()

    @property
    def schedulers(self) -> dict[str, SchedulerHandle]:
        return dict(self._schedulers)

    # --- diagnostics --------------------------------------------------------------------

    def tail_logs(self, lines: int = 40, names: Sequence[str] | None = None) -> str:
        """The last lines of each process' log, headed by its pid and state."""
        chunks = []
        for name, proc in self.processes.items():
            if names is not None and name not in names:
                continue
            rc = proc.returncode
            status = "running" if rc is None else f"exited with {rc}"
            chunks.append(
                f"----- {name} (pid {proc.pid}, {status}) {proc.log_path} -----\n{proc.tail(lines)}"
            )
        return "\n".join(chunks)

    def api_client(self) -> ApiClient:
        """A kubernetes.client.ApiClient for the admin kubeconfig."""
        from kubernetes import config as k8s_config

        return k8s_config.new_client_from_config(config_file=str(self.kubeconfig))

    def state(self) -> ClusterState:
        """What the CLI records about this cluster (pids with start times, ports, paths)."""
        return ClusterState(
            workdir=str(self.workdir),
            kubeconfig=str(self.kubeconfig),
            server=self.server,
            bin_dir=str(self.bin_dir),
            ports=self.ports,
            processes=[p.info() for p in self.processes.values()],
        )

    # --- internals ----------------------------------------------------------------------

    @property
    def _config_dir(self) -> Path:
        return self.workdir / "config"

    def _require_pki(self) -> Pki:
        if self._pki is None:
            raise RuntimeError("the control plane is not started")
        return self._pki

    def _start(self) -> None:
        t0 = time.monotonic()
        for sub in ("logs", "config", "etcd"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        take = self._reservation.take
        self._ports = {
            "etcd": take(),
            "etcd-peer": take(),
            "apiserver": take(),
            "kube-controller-manager": take(),
            "kwok": take(),
        }
        if self.with_scheduler:
            self._ports["kube-scheduler"] = take()
        pki = self._pki = generate_pki(self.workdir / "pki")
        write_kubeconfig(self.kubeconfig, self.server, pki.ca.cert, pki.clients["admin"])
        for client in ("kube-controller-manager", "kube-scheduler", "kwok"):
            write_kubeconfig(
                self._config_dir / f"{client}.kubeconfig",
                self.server,
                pki.ca.cert,
                pki.clients[client],
                user=client,
            )

        self._spawn("etcd", self._etcd_argv())
        self._wait(
            "etcd",
            lambda: probe(f"http://{LOOPBACK}:{self._ports['etcd']}/health", expect='"true"'),
            ("etcd", "etcd-peer"),
        )
        self._spawn("kube-apiserver", self._apiserver_argv(pki))
        admin = tls_context(pki.ca.cert, pki.clients["admin"].cert, pki.clients["admin"].key)
        self._wait(
            "kube-apiserver",
            lambda: probe(f"{self.server}/readyz", admin),
            ("apiserver",),
        )

        self._spawn("kube-controller-manager", self._kcm_argv(pki))
        if self.with_scheduler:
            sched_config = self._config_dir / "kube-scheduler.yaml"
            sched_config.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": "KubeSchedulerConfiguration",
                        "clientConnection": {"kubeconfig": str(self.scheduler_kubeconfig)},
                        "leaderElection": {"leaderElect": False},
                    },
                    sort_keys=False,
                )
            )
            self._spawn(
                "kube-scheduler",
                self._scheduler_argv(
                    sched_config,
                    self._ports["kube-scheduler"],
                    pki,
                    feature_gate_flags(self.feature_gates),
                ),
            )
        kwok_config = kwok.write_config(
            self._config_dir / "kwok.yaml",
            prompt_pod_deletion=self.prompt_pod_deletion,
            node_lease_duration_seconds=self.node_lease_duration_seconds,
        )
        self._spawn(
            "kwok",
            kwok.command(
                self.bin_dir / "kwok",
                self._config_dir / "kwok.kubeconfig",
                kwok_config,
                self._ports["kwok"],
                self.node_lease_duration_seconds,
            ),
            env=kwok.environment(self.workdir / "kwok", _component_env()),
        )
        self._wait_https(
            "kube-controller-manager", self._ports["kube-controller-manager"], "/healthz"
        )
        if self.with_scheduler:
            # /readyz, not /healthz: it includes sched-handler-sync (informers listed and
            # handed to the handlers), so tests start against a scheduler with its caches.
            self._wait_https("kube-scheduler", self._ports["kube-scheduler"], "/readyz")
        self._wait(
            "kwok",
            lambda: probe(f"http://{LOOPBACK}:{self._ports['kwok']}/healthz", expect="ok"),
            ("kwok",),
        )
        # Pods can only be created once the ServiceAccount admission finds `default`; its
        # appearance also proves kube-controller-manager's controllers are really running.
        self._wait(
            "default ServiceAccount",
            lambda: probe(
                f"{self.server}/api/v1/namespaces/default/serviceaccounts/default", admin
            ),
            (),
        )
        save(self.state(), self.workdir / "cluster.json")
        self.startup_seconds = time.monotonic() - t0

    def _spawn(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cpus: Iterable[int] | None = None,
    ) -> ManagedProcess:
        proc = ManagedProcess(
            name,
            argv,
            self.log_dir / f"{name}.log",
            env=env if env is not None else _component_env(),
            cwd=self.workdir,
            detached=self.detached,
            cpus=cpus,
        )
        if name in _ORDER:
            self._procs[name] = proc
        return proc.start()

    def _guard(self, extra: ManagedProcess | None = None) -> None:
        """Abort a wait as soon as a core process (or the one being waited for) has died."""
        watched = [*self._procs.values(), *([extra] if extra is not None else [])]
        for proc in watched:
            rc = proc.returncode
            if rc is not None:
                raise ProcessDiedError(f"{proc.name} exited with {rc}: {proc.tail(1)}")

    def _wait(
        self,
        what: str,
        check: Callable[[], bool | str],
        release: Sequence[str],
        timeout: float | None = None,
    ) -> None:
        wait_for(check, timeout=timeout or self.start_timeout, what=what, guard=self._guard)
        for key in release:
            self._reservation.release(self._ports[key])

    def _wait_https(
        self,
        name: str,
        port: int,
        path: str,
        timeout: float | None = None,
        proc: ManagedProcess | None = None,
    ) -> None:
        ctx = tls_context(self._require_pki().ca.cert)
        wait_for(
            lambda: probe(f"https://{LOOPBACK}:{port}{path}", ctx, expect="ok"),
            timeout=timeout or self.start_timeout,
            what=name,
            guard=lambda: self._guard(proc),
        )
        self._reservation.release(port)

    def _bin(self, name: str) -> str:
        return str(self.bin_dir / name)

    def _etcd_argv(self) -> list[str]:
        client = f"http://{LOOPBACK}:{self._ports['etcd']}"
        peer = f"http://{LOOPBACK}:{self._ports['etcd-peer']}"
        return [
            self._bin("etcd"),
            "--name=kube-pysched",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=kube-pysched={peer}",
            "--initial-cluster-state=new",
            # Test data is disposable: skipping fsync keeps etcd fast on shared CI disks.
            "--unsafe-no-fsync=true",
            "--auto-compaction-retention=1",
            "--log-level=warn",
        ]

    def _apiserver_argv(self, pki: Pki) -> list[str]:
        return [
            self._bin("kube-apiserver"),
            f"--etcd-servers=http://{LOOPBACK}:{self._ports['etcd']}",
            f"--bind-address={LOOPBACK}",
            # Loopback cannot be advertised in the `kubernetes` Endpoints; nothing runs in-cluster
            # that would need them, so the reconciler is off instead of advertising a host IP.
            f"--advertise-address={LOOPBACK}",
            "--endpoint-reconciler-type=none",
            f"--secure-port={self._ports['apiserver']}",
            f"--tls-cert-file={pki.apiserver.cert}",
            f"--tls-private-key-file={pki.apiserver.key}",
            f"--client-ca-file={pki.ca.cert}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            f"--requestheader-client-ca-file={pki.front_proxy_ca.cert}",
            f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki.front_proxy_client.cert}",
            f"--proxy-client-key-file={pki.front_proxy_client.key}",
            *feature_gate_flags(self.feature_gates),
            *runtime_config_flags(self.runtime_config),
        ]

    def _kcm_argv(self, pki: Pki) -> list[str]:
        kubeconfig = self._config_dir / "kube-controller-manager.kubeconfig"
        return [
            self._bin("kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--authorization-always-allow-paths={ALWAYS_ALLOW_PATHS}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={self._ports['kube-controller-manager']}",
            f"--tls-cert-file={pki.serving.cert}",
            f"--tls-private-key-file={pki.serving.key}",
            f"--root-ca-file={pki.ca.cert}",
            f"--service-account-private-key-file={pki.sa_key}",
            "--use-service-account-credentials=true",
            f"--cluster-signing-cert-file={pki.ca.cert}",
            f"--cluster-signing-key-file={pki.ca.key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            f"--node-monitor-grace-period={self.node_monitor_grace_period}",
            "--leader-elect=false",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            *feature_gate_flags(self.feature_gates),
        ]

    def _scheduler_argv(
        self, config: Path, port: int, pki: Pki, extra_args: Sequence[str]
    ) -> list[str]:
        kubeconfig = self.scheduler_kubeconfig
        return [
            self._bin("kube-scheduler"),
            f"--config={config}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--authorization-always-allow-paths={ALWAYS_ALLOW_PATHS}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={port}",
            f"--tls-cert-file={pki.serving.cert}",
            f"--tls-private-key-file={pki.serving.key}",
            *extra_args,
        ]


def feature_gate_flags(gates: Mapping[str, bool]) -> list[str]:
    """``--feature-gates=A=true,B=false`` (sorted), or nothing for no gates."""
    if not gates:
        return []
    items = ",".join(f"{name}={str(on).lower()}" for name, on in sorted(gates.items()))
    return [f"--feature-gates={items}"]


def runtime_config_flags(config: Mapping[str, str]) -> list[str]:
    """``--runtime-config=group/version=true,...`` (sorted), or nothing."""
    if not config:
        return []
    return ["--runtime-config=" + ",".join(f"{k}={v}" for k, v in sorted(config.items()))]


def _component_env() -> dict[str, str]:
    """The caller's environment minus KUBECONFIG: components get explicit kubeconfig flags."""
    env = dict(os.environ)
    env.pop("KUBECONFIG", None)
    return env


def _load_scheduler_config(config: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return dict(config)
    text = config.read_text() if isinstance(config, Path) else config
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or doc.get("kind") != "KubeSchedulerConfiguration":
        raise ValueError("expected a KubeSchedulerConfiguration document")
    return doc
