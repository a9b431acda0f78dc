"""Where the API server is and how to authenticate to it.

Loading is delegated to the `kubernetes` package's config loaders, which understand every
kubeconfig auth flavour (client certificates, tokens, exec plugins, OIDC) and the in-cluster
service account with its token refresh. The result is reduced to a small `ClientConfig` that the
REST client reads; the kubernetes client model classes are never used for requests.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from scheduler import __version__

USER_AGENT = f"kube-pysched/{__version__}"

# KubeSchedulerConfiguration.clientConnection defaults.
DEFAULT_QPS = 50.0
DEFAULT_BURST = 100

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"


class ConfigError(Exception):
    """No usable connection settings were found."""


class AuthHeaders(Protocol):
    """Current authentication headers; `invalidate` forces a re-check (after a 401)."""

    def __call__(self) -> Mapping[str, str]: ...

    def invalidate(self) -> None: ...


class StaticAuth:
    """Fixed headers (none for client-certificate auth or a test server)."""

    __slots__ = ("_headers",)

    def __init__(self, headers: Mapping[str, str] | None = None) -> None:
        self._headers: Mapping[str, str] = dict(headers or {})

    def __call__(self) -> Mapping[str, str]:
        return self._headers

    def invalidate(self) -> None:
        pass


class KubernetesConfigAuth:
    """The Authorization header from a kubernetes.client.Configuration.

    The configuration's refresh hook (exec plugins, expiring tokens, the in-cluster token file)
    runs at most once per `recheck_interval` seconds rather than on every request: the loaders
    refresh minutes before expiry, so a second of staleness is harmless and the hot path stays a
    clock read. The same Mapping object is returned until the header changes.
    """

    __slots__ = ("_config", "_headers", "_lock", "_next_check", "_recheck_interval")

    def __init__(self, configuration: Any, recheck_interval: float = 1.0) -> None:
        self._config = configuration
        self._recheck_interval = recheck_interval
        self._lock = threading.Lock()
        self._headers: Mapping[str, str] = {}
        self._next_check = 0.0

    def __call__(self) -> Mapping[str, str]:
        if time.monotonic() < self._next_check:
            return self._headers
        with self._lock:
            now = time.monotonic()
            if now >= self._next_check:
                value = self._config.get_api_key_with_prefix("BearerToken", alias="authorization")
                headers = {"Authorization": value} if value else {}
                if headers != self._headers:
                    self._headers = headers
                self._next_check = now + self._recheck_interval
            return self._headers

    def invalidate(self) -> None:
        self._next_check = 0.0


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Connection settings for RestClient. `qps < 0` disables client-side rate limiting.

    Use dataclasses.replace to derive variants (e.g. other limits for the events client).
    """

    server: str
    auth: AuthHeaders = field(default_factory=StaticAuth)
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify_tls: bool = True
    tls_server_name: str | None = None
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    user_agent: str = USER_AGENT


def _from_kubernetes_configuration(
    cfg: Any, qps: float, burst: int, user_agent: str, master: str | None
) -> ClientConfig:
    if not cfg.host:
        raise ConfigError("the loaded configuration names no server")
    if getattr(cfg, "proxy", None):
        raise ConfigError("a proxy-url in the kubeconfig is not supported")
    return ClientConfig(
        server=(master or cfg.host).rstrip("/"),
        auth=KubernetesConfigAuth(cfg),
        ca_file=cfg.ssl_ca_cert or None,
        cert_file=cfg.cert_file or None,
        key_file=cfg.key_file or None,
        verify_tls=bool(cfg.verify_ssl),
        tls_server_name=getattr(cfg, "tls_server_name", None) or None,
        qps=qps,
        burst=burst,
        user_agent=user_agent,
    )


def certificate_dir() -> str | None:
    """Where the kubernetes loader writes a kubeconfig's embedded certificates (`*-data`):
    the usual temporary directory, else /dev/shm (a read-only root filesystem usually keeps a
    tmpfs there), else None (the loader's own choice, which then fails with its message)."""
    try:
        return tempfile.gettempdir()
    except FileNotFoundError:  # "No usable temporary directory found"
        pass
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def load_client_config(
    kubeconfig: str | os.PathLike[str] | None = None,
    *,
    context: str | None = None,
    master: str | None = None,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
    user_agent: str = USER_AGENT,
) -> ClientConfig:
    """Connection settings from, in order: `kubeconfig`, $KUBECONFIG, the in-cluster service
    account, ~/.kube/config. `master` overrides the server URL (kube-scheduler's --master).

    A qps of 0 (unset) takes kube-scheduler's defaults of 50 qps and 100 burst.
    """
    from kubernetes import client as k8s_client
    from kubernetes import config as untyped_config
    from kubernetes.config.config_exception import ConfigException

    k8s_config: Any = untyped_config

    if qps == 0:
        qps = DEFAULT_QPS
    if burst == 0:
        burst = DEFAULT_BURST
    cfg = k8s_client.Configuration()
    try:
        if kubeconfig is not None:
            k8s_config.load_kube_config(
                config_file=str(kubeconfig),
                context=context,
                client_configuration=cfg,
                persist_config=False,
                temp_file_path=certificate_dir(),
            )
        elif os.environ.get("KUBECONFIG"):
            # The loader merges a colon-separated list itself.
            k8s_config.load_kube_config(
                config_file=os.environ["KUBECONFIG"],
                context=context,
                client_configuration=cfg,
                persist_config=False,
                temp_file_path=certificate_dir(),
            )
        elif os.environ.get(SERVICE_HOST_ENV):
            k8s_config.load_incluster_config(client_configuration=cfg, try_refresh_token=True)
        elif Path("~/.kube/config").expanduser().exists():
            k8s_config.load_kube_config(
                config_file=str(Path("~/.kube/config").expanduser()),
                context=context,
                client_configuration=cfg,
                persist_config=False,
                temp_file_path=certificate_dir(),
            )
        elif master:
            cfg.host = master
        else:
            raise ConfigError(
                "no kubeconfig given, $KUBECONFIG unset, not running in a cluster and no "
                "~/.kube/config"
            )
    except ConfigException as err:
        raise ConfigError(str(err)) from err
    return _from_kubernetes_configuration(cfg, qps, burst, user_agent, master)
