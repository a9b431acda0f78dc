"""CLI: ``python -m e2e.cluster build|build-e2e|up|down|status|logs``.

``up`` leaves a detached control plane running after the command (and ``make``) returns and
records it in a state file; ``down`` stops exactly the recorded processes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from e2e.cluster import state as cluster_state
from e2e.cluster.build import BuildError, build, cache_root, ensure_helm
from e2e.cluster.controlplane import ControlPlane
from e2e.cluster.e2etest import build_e2e_test
from e2e.cluster.processes import is_same_process, stop_recorded, tail_file
from e2e.cluster.readiness import http_get, tls_context
from e2e.cluster.versions import HELM_VERSION, KUBERNETES_VERSION, KWOK_VERSION

# Stop order for `down`: clients first, then the API server, then its storage.
_STOP_GROUPS = (
    lambda n: n not in {"kube-apiserver", "etcd"},
    lambda n: n == "kube-apiserver",
    lambda n: n == "etcd",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.cluster", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser(
        "build", help="build the pinned binaries (control plane, kwok, helm) into the cache (once)"
    )
    p_build.add_argument("--force", action="store_true", help="rebuild even if cached")
    p_e2e = sub.add_parser(
        "build-e2e", help="build Kubernetes' e2e.test of the pinned release into the cache (once)"
    )
    p_e2e.add_argument("--force", action="store_true", help="rebuild even if cached")
    p_up = sub.add_parser("up", help="start a detached control plane")
    p_up.add_argument(
        "--no-scheduler", action="store_true", help="do not run kube-scheduler as default"
    )
    p_down = sub.add_parser("down", help="stop the detached control plane")
    p_down.add_argument("--keep-logs", action="store_true", help="keep the run directory")
    sub.add_parser("status", help="show the detached control plane (exit 3 if none)")
    p_logs = sub.add_parser("logs", help="print the tail of each component's log")
    p_logs.add_argument("-n", "--lines", type=int, default=40)
    args = parser.parse_args(argv)

    if args.command == "build":
        return _build(args.force)
    if args.command == "build-e2e":
        return _build_e2e(args.force)
    if args.command == "up":
        return _up(with_scheduler=not args.no_scheduler)
    if args.command == "down":
        return _down(keep_logs=args.keep_logs)
    if args.command == "status":
        return _status()
    return _logs(args.lines)


def _build(force: bool) -> int:
    t0 = time.monotonic()
    try:
        bin_dir = build(force=force)
        helm = ensure_helm()
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    print(
        f"Kubernetes {KUBERNETES_VERSION} + kwok {KWOK_VERSION}: {bin_dir}, "
        f"helm {HELM_VERSION}: {helm} ({time.monotonic() - t0:.1f}s)"
    )
    return 0


def _build_e2e(force: bool) -> int:
    t0 = time.monotonic()
    try:
        binary = build_e2e_test(force=force)
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    print(f"Kubernetes {KUBERNETES_VERSION} e2e.test: {binary} ({time.monotonic() - t0:.1f}s)")
    return 0


def _up(with_scheduler: bool) -> int:
    existing = cluster_state.load()
    if existing is not None:
        if all(is_same_process(p) for p in existing.processes):
            print("a control plane is already running:")
            _print_usage(existing)
            return 0
        print("found a partly dead control plane from an earlier `up`; cleaning it up")
        _stop_state(existing, keep_logs=True)
    runs = cache_root() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    workdir = runs / time.strftime("up-%Y%m%d-%H%M%S")
    cp = ControlPlane(workdir=workdir, with_scheduler=with_scheduler, detached=True)
    try:
        cp.start()
    except Exception as exc:
        print(f"control plane failed to start: {exc}", file=sys.stderr)
        return 1
    st = cp.state()
    cluster_state.save(st)
    print(
        f"control plane up in {cp.startup_seconds:.1f}s "
        f"(Kubernetes {KUBERNETES_VERSION}, kwok {KWOK_VERSION})"
    )
    _print_usage(st)
    return 0


def _print_usage(st: cluster_state.ClusterState) -> None:
    pids = ", ".join(f"{p.name}={p.pid}" for p in st.processes)
    print(f"  API server: {st.server}")
    print(f"  processes:  {pids}")
    print(f"  logs:       {Path(st.workdir) / 'logs'}")
    print("point kubectl at it with:")
    print(f"  export KUBECONFIG={st.kubeconfig}")
    print(f"  export PATH={st.bin_dir}:$PATH")
    print("  kubectl get --raw=/readyz && kubectl get nodes")
    print("stop it with: make cluster-down  (or python -m e2e.cluster down)")


def _stop_state(st: cluster_state.ClusterState, keep_logs: bool) -> list[str]:
    killed: list[str] = []
    for group in _STOP_GROUPS:
        killed += stop_recorded([p for p in st.processes if group(p.name)])
    cluster_state.clear()
    if not keep_logs:
        shutil.rmtree(st.workdir, ignore_errors=True)
    return killed


def _down(keep_logs: bool) -> int:
    st = cluster_state.load()
    if st is None:
        print("no control plane is recorded; nothing to stop")
        return 0
    killed = _stop_state(st, keep_logs)
    left = [p for p in st.processes if is_same_process(p)]
    if left:
        print(f"still running: {', '.join(f'{p.name}={p.pid}' for p in left)}", file=sys.stderr)
        return 1
    note = f" (SIGKILLed: {', '.join(killed)})" if killed else ""
    print(f"stopped {len(st.processes)} processes{note}")
    if keep_logs:
        print(f"logs kept in {Path(st.workdir) / 'logs'}")
    return 0


def _status() -> int:
    st = cluster_state.load()
    if st is None:
        print("no control plane is running (start one with: make cluster-up)")
        return 3
    pki = Path(st.workdir) / "pki"
    ctx = tls_context(pki / "ca.crt", pki / "client-admin.crt", pki / "client-admin.key")
    code, body = http_get(f"{st.server}/readyz", ctx)
    print(f"API server {st.server}: /readyz -> {code} {body.strip()[:60]}")
    all_alive = True
    for p in st.processes:
        alive = is_same_process(p)
        all_alive &= alive
        print(f"  {p.name:<26} pid {p.pid:<8} {'running' if alive else 'NOT RUNNING'}")
    print(f"  export KUBECONFIG={st.kubeconfig}")
    return 0 if all_alive and code == 200 else 1


def _logs(lines: int) -> int:
    st = cluster_state.load()
    if st is None:
        print("no control plane is running")
        return 3
    for p in st.processes:
        print(f"----- {p.name} (pid {p.pid}) {p.log} -----")
        print(tail_file(Path(p.log), lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
