"""The KubeSchedulerConfiguration v1 file: strict decoding, defaults, validation."""

from scheduler.config.errors import ConfigError, FieldError
from scheduler.config.load import load_config, parse_config
from scheduler.config.types import KubeSchedulerConfiguration

__all__ = ["ConfigError", "FieldError", "KubeSchedulerConfiguration", "load_config", "parse_config"]
