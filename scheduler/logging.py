"""structlog setup: JSON lines by default, a console renderer for people, cheap disabled levels.

Convention: every log line about a pod carries `pod="namespace/name"` and, for node decisions,
`node="name"`, so logs can be filtered per pod; `pod_fields()` builds those keyword arguments.
The scheduling loop logs per pod at debug level, so loggers come from
`structlog.make_filtering_bound_logger`: a disabled level is a no-op method, not a level check.
The per-pod lines on the hottest paths also check `debug_enabled()` first, which skips the lazy
logger proxy and building the line's fields.

Verbosity follows klog's -v as kube-scheduler uses it: V(0)-V(3) lines are written at info level
but only when -v is at least their V (`v_enabled(2)` guards kube-scheduler's V(2) lines, such
as "successfully bound pod to node"); V(4) and above are the debug level.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, BinaryIO, Protocol, TextIO, cast

import orjson
import structlog

LOG_FORMATS = ("json", "console")
DEBUG_VERBOSITY = 4


class _Levels:
    """What configure_logging chose; structlog's default configuration writes every level."""

    debug = True
    verbosity = 1 << 30  # as debug: everything is written until configure_logging


_V_ALL = _Levels.verbosity


_LEVELS = _Levels()


def debug_enabled() -> bool:
    """Checked before a debug line in a per-pod hot path, so a disabled level costs neither
    the lazy logger proxy's lookup nor building the line's fields."""
    return _LEVELS.debug


def v_enabled(level: int) -> bool:
    """klog's V(level).Enabled(): whether a line of that verbosity is written. Checked before
    building a per-pod info line (one attribute read and a comparison when it is not)."""
    return _LEVELS.verbosity >= level


class _NamedPod(Protocol):
    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...


def pod_key(pod: _NamedPod) -> str:
    """The `namespace/name` form kube-scheduler's klog.KObj prints."""
    return f"{pod.namespace}/{pod.name}"


def pod_fields(pod: _NamedPod, node: str | None = None) -> dict[str, str]:
    """Keyword arguments for a log line about `pod` (and the node it was placed on or tried)."""
    fields = {"pod": pod_key(pod)}
    if node is not None:
        fields["node"] = node
    return fields


def reset_logging() -> None:
    """Back to structlog's defaults (every level written), as before configure_logging."""
    structlog.reset_defaults()
    _LEVELS.debug = True
    _LEVELS.verbosity = _V_ALL


def level_for_verbosity(verbosity: int) -> int:
    """klog-style -v: 0-3 info, 4 and above debug (kube-scheduler logs per-pod detail at 4+)."""
    return logging.DEBUG if verbosity >= DEBUG_VERBOSITY else logging.INFO


def _add_logger_name(
    logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Adds the name given to structlog.get_logger(name), without the stdlib logging machinery."""
    name = getattr(logger, "name", None)
    if name:
        event_dict.setdefault("logger", name)
    return event_dict


def _encode(_logger: Any, _method: str, event: str | bytes) -> bytes:
    """The console renderer makes text; the shared bytes logger writes bytes."""
    return event.encode() if isinstance(event, str) else event


class _TextAsBytes:
    """Lets the bytes logger write to a text stream that has no .buffer (a StringIO in tests)."""

    def __init__(self, text: TextIO) -> None:
        self._text = text

    def write(self, data: bytes) -> int:
        self._text.write(data.decode())
        return len(data)

    def flush(self) -> None:
        self._text.flush()


def _stderr_bytes() -> BinaryIO:
    buffer = getattr(sys.stderr, "buffer", None)
    return buffer if buffer is not None else cast(BinaryIO, _TextAsBytes(sys.stderr))


def _orjson_dumps(obj: Any, default: Any = None) -> bytes:
    return orjson.dumps(obj, default=default or str)


def configure_logging(
    log_format: str = "json", verbosity: int = 0, *, stream: BinaryIO | None = None
) -> None:
    """Configures structlog (and the stdlib logging libraries use) for the whole process.

    Lines go to stderr unless `stream` (a binary file) is given.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}: use json or console")
    level = level_for_verbosity(verbosity)
    _LEVELS.debug = level <= logging.DEBUG
    _LEVELS.verbosity = verbosity
    out = stream if stream is not None else _stderr_bytes()
    renderer: list[Any]
    if log_format == "json":
        renderer = [structlog.processors.JSONRenderer(serializer=_orjson_dumps)]
    else:
        colors = stream is None and sys.stderr.isatty()
        renderer = [structlog.dev.ConsoleRenderer(colors=colors), _encode]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            _add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            *renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.BytesLoggerFactory(out),
        cache_logger_on_first_use=True,
    )
    # Libraries that use stdlib logging (urllib3, kubernetes) only speak up for warnings.
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s"
    )
