"""What the command line decides, after the config file is loaded and flags are applied."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.config.types import KubeSchedulerConfiguration
from scheduler.features import FeatureGates

DEFAULT_SECURE_PORT = 10259  # kube-scheduler's DefaultKubeSchedulerPort
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
DEFAULT_AUTH_CACHE_TTL = 10.0
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
LOOPBACK_ADDRESS = "127.0.0.1"
DEFAULT_EXPLAIN_MAX_PODS = 1000


@dataclass
class SecureServing:
    """The HTTPS port and its delegated authentication/authorization (kube-scheduler's
    SecureServingOptions, DelegatingAuthenticationOptions, DelegatingAuthorizationOptions)."""

    bind_address: str = "0.0.0.0"  # --bind-address
    port: int = DEFAULT_SECURE_PORT  # --secure-port; 0 serves no HTTPS at all
    cert_file: str = ""  # --tls-cert-file; empty: a pair generated at start
    key_file: str = ""  # --tls-private-key-file
    client_ca_file: str = ""  # --client-ca-file; empty: no client-certificate authentication
    token_cache_ttl: float = DEFAULT_AUTH_CACHE_TTL  # --authentication-token-webhook-cache-ttl
    authorized_ttl: float = DEFAULT_AUTH_CACHE_TTL  # --authorization-webhook-cache-authorized-ttl
    unauthorized_ttl: float = DEFAULT_AUTH_CACHE_TTL  # ...-cache-unauthorized-ttl
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS


@dataclass
class Options:
    """Everything app.run needs. Flags that override the file (--kubeconfig, --leader-elect) are
    applied to `config` by the CLI, the one place that decides them; /configz shows the result."""

    config: KubeSchedulerConfiguration
    master: str | None = None  # --master: API server URL, overrides the kubeconfig's
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    secure_serving: SecureServing = field(default_factory=SecureServing)
    # --port/--address: plain HTTP without authentication, for development; loopback only,
    # 0 (the default) serves none.
    port: int = 0
    address: str = LOOPBACK_ADDRESS
    log_format: str = "json"  # json | console
    verbosity: int = 0  # klog-style -v: 2 per-pod results, 4 and above logs at debug
    pod_max_in_unschedulable_pods_duration: float = DEFAULT_MAX_IN_UNSCHEDULABLE  # seconds
    #: --explain-max-pods: pods whose latest attempt is kept for explanations; 0: none.
    explain_max_pods: int = DEFAULT_EXPLAIN_MAX_PODS
    flags: Mapping[str, str] = field(default_factory=dict)  # every flag's value, for /flagz
