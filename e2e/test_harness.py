"""The harness itself: isolation between control planes, loopback-only sockets, extra schedulers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kubernetes import client as k8s

from e2e.cluster import ControlPlane, is_running, wait_for_pod
from e2e.cluster.nodes import NodeFactory
from e2e.cluster.ports import LOOPBACK
from e2e.cluster.processes import proc_start_time
from e2e.cluster.readiness import http_get, tls_context


def _listening_addresses(pid: int) -> set[str]:
    """host:port of every TCP socket the process listens on (from /proc, no tools needed)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A = LISTEN
                host_hex, port_hex = local.split(":")
                host = (
                    ".".join(str(int(host_hex[i : i + 2], 16)) for i in (6, 4, 2, 0))
                    if len(host_hex) == 8
                    else f"[{host_hex}]"
                )
                found.add(f"{host}:{int(port_hex, 16)}")
    return found


@pytest.mark.parametrize("with_scheduler", [False, True], ids=["no-scheduler", "scheduler"])
def test_second_control_plane_runs_side_by_side(
    local_control_plane: ControlPlane, with_scheduler: bool
) -> None:
    first = local_control_plane
    with ControlPlane(with_scheduler=with_scheduler) as second:
        if with_scheduler:
            # start() returned after its kube-scheduler's handlers synced, not merely /healthz.
            status, body = http_get(
                f"https://{LOOPBACK}:{second.ports['kube-scheduler']}/readyz?verbose",
                tls_context(second.ca_cert),
            )
            assert status == 200 and "[+]sched-handler-sync ok" in body, body
        else:
            assert "kube-scheduler" not in second.pids
        assert not set(first.ports.values()) & set(second.ports.values())
        assert second.server != first.server
        for cp in (first, second):
            for name, proc in cp.processes.items():
                if not proc.alive():
                    continue  # e.g. an extra scheduler another test started and stopped
                addresses = _listening_addresses(proc.pid)
                assert addresses, f"{name} listens on nothing"
                assert all(a.startswith("127.0.0.1:") for a in addresses), (name, addresses)
        pids = second.pids
    assert all(proc_start_time(pid) is None for pid in pids.values()), "processes left behind"
    assert all(p.alive() for n, p in first.processes.items() if n not in first.schedulers)


def test_extra_scheduler_with_custom_scheduler_name(
    local_control_plane: ControlPlane,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
) -> None:
    kwok_nodes(2)
    handle = local_control_plane.start_scheduler(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "e2e-extra-scheduler"}],
        },
        name="kube-scheduler-e2e",
    )
    try:
        assert local_control_plane.pids["kube-scheduler-e2e"] == handle.pid
        # start_scheduler returned after kube-scheduler's handlers synced, not merely /healthz.
        status, body = http_get(
            f"https://{LOOPBACK}:{handle.port}/readyz?verbose",
            tls_context(local_control_plane.ca_cert),
        )
        assert status == 200 and "[+]sched-handler-sync ok" in body, body
        pod = k8s.V1Pod(
            metadata=k8s.V1ObjectMeta(name="custom"),
            spec=k8s.V1PodSpec(
                scheduler_name="e2e-extra-scheduler",
                containers=[k8s.V1Container(name="app", image="registry.k8s.io/pause:3.10")],
            ),
        )
        core_v1.create_namespaced_pod(namespace, pod)
        bound = wait_for_pod(core_v1, namespace, "custom", is_running, what="Running")
        assert bound is not None and bound.spec.node_name
    finally:
        handle.stop()
    assert not handle.alive()
    assert proc_start_time(handle.pid) is None
