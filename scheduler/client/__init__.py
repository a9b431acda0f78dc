"""The only code that talks to the API server: config, REST, informers, API calls, events,
leader election. Imports only scheduler.api, scheduler.metrics and scheduler.clock."""

from scheduler.client.api import KubeApi
from scheduler.client.config import ClientConfig, ConfigError, load_client_config
from scheduler.client.events import EventRecorder, ObjectRef
from scheduler.client.informer import (
    Informer,
    InformerStore,
    node_informer,
    pdb_informer,
    pod_informer,
)
from scheduler.client.leaderelection import LeaderElectionConfig, LeaderElector
from scheduler.client.reflector import ListWatchSpec, Reflector
from scheduler.client.rest import RestClient

__all__ = [
    "ClientConfig",
    "ConfigError",
    "EventRecorder",
    "Informer",
    "InformerStore",
    "KubeApi",
    "LeaderElectionConfig",
    "LeaderElector",
    "ListWatchSpec",
    "ObjectRef",
    "Reflector",
    "RestClient",
    "load_client_config",
    "node_informer",
    "pdb_informer",
    "pod_informer",
]
