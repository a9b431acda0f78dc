"""A local port tunnelled to a pod's port through the API server's pods/portforward
subresource, with the caller's own kubeconfig credentials (what `kubectl port-forward` does).

`kube-pysched explain` reaches the scheduler's secure port this way in a cluster: the API
server authorizes the tunnel (the caller needs `create` on pods/portforward in the scheduler's
namespace), and the scheduler then authenticates and authorizes the request itself
(TokenReview, client certificate, SubjectAccessReview), so the caller's identity reaches it,
which the API server's service proxy would not pass on.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

from scheduler.client.config import ConfigError, certificate_dir

CHUNK = 65536


def _api_client(kubeconfig: str | None, context: str | None) -> Any:
    from kubernetes import client as k8s_client
    from kubernetes import config as untyped_config
    from kubernetes.config.config_exception import ConfigException

    k8s_config: Any = untyped_config
    cfg = k8s_client.Configuration()
    try:
        k8s_config.load_kube_config(
            config_file=kubeconfig or os.environ.get("KUBECONFIG") or None,
            context=context,
            client_configuration=cfg,
            persist_config=False,
            temp_file_path=certificate_dir(),
        )
    except ConfigException as err:
        raise ConfigError(str(err)) from err
    return k8s_client.ApiClient(cfg)


def _pipe(source: Any, sink: Any, done: threading.Event) -> None:
    """Copies bytes until either side closes."""
    try:
        while not done.is_set():
            data = source.recv(CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        done.set()
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


class PortForwardError(Exception):
    """The API server refused the tunnel, or the pod's port could not be reached."""


@contextlib.contextmanager
def forward(
    namespace: str,
    pod: str,
    port: int,
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
) -> Iterator[int]:
    """A loopback port whose every connection is tunnelled to `pod`:`port`; yields it. The
    first tunnel is opened before yielding, so a refusal is raised here, not lost."""
    from kubernetes import client as k8s_client
    from kubernetes.client.exceptions import ApiException
    from kubernetes.stream import portforward

    api = k8s_client.CoreV1Api(_api_client(kubeconfig, context))

    def tunnel() -> Any:
        try:
            opened = portforward(
                api.connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port)
            )
            return opened.socket(port)
        except ApiException as err:
            raise PortForwardError(
                f"port-forward to pod {namespace}/{pod} port {port} refused: "
                f"{err.status} {err.reason}"
            ) from err
        except Exception as err:
            raise PortForwardError(
                f"port-forward to pod {namespace}/{pod} port {port} failed: {err}"
            ) from err

    first = [tunnel()]
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                local, _ = listener.accept()
            except OSError:
                return
            try:
                remote = first.pop() if first else tunnel()
            except PortForwardError:
                local.close()
                continue
            done = threading.Event()
            for a, b in ((local, remote), (remote, local)):
                threading.Thread(target=_pipe, args=(a, b, done), daemon=True).start()

    thread = threading.Thread(target=serve, name=f"port-forward {pod}", daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        listener.close()
