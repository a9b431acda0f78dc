"""structlog setup: JSON lines by default, a console renderer for people, cheap disabled levels.

Convention: every log line about a pod carries `pod="namespace/name"` and, for node decisions,
`node="name"` as keyword arguments, so logs can be filtered per pod.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog


def level_for_verbosity(verbosity: int) -> int:
    """klog-style -v: 0-3 info, 4 and above debug (kube-scheduler logs per-pod detail at 4+)."""
    return logging.DEBUG if verbosity >= 4 else logging.INFO


def _orjson_dumps(obj: Any, default: Any = None) -> str:
    return orjson.dumps(obj, default=default or str).decode()


def configure_logging(log_format: str = "json", verbosity: int = 0) -> None:
    """Configures structlog (and stdlib logging it may meet) for the whole process."""
    if log_format not in ("json", "console"):
        raise ValueError(f"unknown log format {log_format!r}: use json or console")
    level = level_for_verbosity(verbosity)
    renderer: Any
    if log_format == "json":
        renderer = structlog.processors.JSONRenderer(serializer=_orjson_dumps)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s"
    )
