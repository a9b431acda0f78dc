"""The container image: built here without a Docker engine (e2e.image), kube-pysched runs from
it as uid 65532 on a read-only root filesystem and schedules a pod (docs/operations.md).

Skipped when the host lacks root or debootstrap/buildah/umoci/runc, unless
$KUBE_PYSCHED_IMAGE_REQUIRED is set (`make image-test`), which turns that skip into a failure.
Cold (Debian base, wheels, bud, unpack) about 2 minutes; warm (reused image) seconds.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from e2e.cluster import ControlPlane, ExternalCluster, is_running, wait_for_pod
from e2e.cluster.nodes import NodeFactory
from e2e.cluster.ports import LOOPBACK, PortReservation
from e2e.image import Container, Image, ImageError, build, host_problem
from e2e.pysched import default_config
from scheduler import __version__

pytestmark = pytest.mark.timeout(900)

NONROOT = 65532
Cluster = ControlPlane | ExternalCluster


@pytest.fixture(scope="module")
def image() -> Image:
    problem = host_problem()
    if problem:
        if os.environ.get("KUBE_PYSCHED_IMAGE_REQUIRED"):
            pytest.fail(f"cannot build the image here: {problem}")
        pytest.skip(f"cannot build the image here: {problem}")
    try:
        return build()
    except ImageError as exc:
        pytest.fail(str(exc))


def test_image_config_is_nonroot_with_the_entrypoint(image: Image) -> None:
    assert image.config["User"] == f"{NONROOT}:{NONROOT}"
    assert image.config["Entrypoint"] == ["kube-pysched"]
    assert image.config["Cmd"] == [
        "--config",
        "/etc/kube-pysched/config.yaml",
        "--leader-elect=true",
    ]


def test_version_as_nonroot_on_read_only_root(image: Image, tmp_path: Path) -> None:
    done = Container(image, ["--version"], workdir=tmp_path).run()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"kube-pysched {__version__}"

    probe = (
        "import os\n"
        "print(os.getuid(), os.getgid())\n"
        "try:\n"
        "    open('/probe', 'w')\n"
        "except OSError as e:\n"
        "    print(e.strerror)\n"
    )
    done = Container(image, ["-c", probe], entrypoint=["python3"], workdir=tmp_path).run()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{NONROOT} {NONROOT}", "Read-only file system"]


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code


def test_schedules_a_pod_from_the_image(
    image: Image,
    cluster: Cluster,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    tmp_path: Path,
) -> None:
    scheduler_name = "kube-pysched-image"
    nodes = {n.metadata.name for n in kwok_nodes(2)}

    # What a Deployment mounts: the configuration and a kubeconfig, read-only, readable by
    # the image's user only.
    etc = tmp_path / "etc"
    etc.mkdir()
    config = default_config(profiles=[{"schedulerName": scheduler_name}])
    (etc / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    # Embedded certificates (*-data) as the control plane's kubeconfig has them: the client
    # writes them to /dev/shm when the read-only root has no usable temporary directory.
    (etc / "kubeconfig").write_text(Path(cluster.kubeconfig).read_text())
    for path in etc.iterdir():
        os.chown(path, NONROOT, NONROOT)
        path.chmod(0o400)

    with PortReservation() as ports:
        port, secure_port = ports.take(), ports.take()
        container = Container(
            image,
            [
                "--config",
                "/etc/kube-pysched/config.yaml",
                "--kubeconfig",
                "/etc/kube-pysched/kubeconfig",
                "--port",
                str(port),
                "--address",
                LOOPBACK,
                "--bind-address",
                LOOPBACK,
                "--secure-port",
                str(secure_port),
            ],
            mounts={"/etc/kube-pysched": etc},
            workdir=tmp_path,
        ).start()
        try:
            deadline = time.monotonic() + 90
            while True:
                assert container.alive(), f"kube-pysched exited:\n{container.tail()}"
                try:
                    if _get(f"http://{LOOPBACK}:{port}/readyz") == 200:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, f"not ready:\n{container.tail()}"
                time.sleep(0.2)
        except BaseException:
            container.stop()
            raise
    try:
        pod = k8s.V1Pod(
            metadata=k8s.V1ObjectMeta(name="from-image"),
            spec=k8s.V1PodSpec(
                scheduler_name=scheduler_name,
                node_selector={"type": "kwok"},
                termination_grace_period_seconds=0,
                containers=[
                    k8s.V1Container(
                        name="app",
                        image="registry.k8s.io/pause:3.10",
                        resources=k8s.V1ResourceRequirements(requests={"cpu": "100m"}),
                    )
                ],
            ),
        )
        core_v1.create_namespaced_pod(namespace, pod)
        bound = wait_for_pod(core_v1, namespace, "from-image", is_running, what="bound and Running")
        assert bound is not None
        assert bound.spec.node_name in nodes
        # Only a scheduler with this profile binds it: the default scheduler ignores the pod.
        assert bound.spec.scheduler_name == scheduler_name
        assert container.alive(), container.tail()
        assert container.stop() == 0, container.tail()  # SIGTERM through runc: clean exit
    except BaseException:
        print(f"----- {container.name} log tail ({container.log_path}) -----\n{container.tail(80)}")
        raise
    finally:
        container.stop()
