"""/flagz and /statusz: the command line and the process's state, as kube-scheduler serves them.

kube-scheduler installs k8s.io/apiserver's flagz and statusz handlers. Without an Accept header
(or with text/plain, text/* or */*) they answer a text page that says it is not meant to be
parsed; its key/value delimiter is picked at random per response so that nobody does. A caller
that wants data asks for it by kind: `application/json;as=Flagz;v=v1beta1;g=config.k8s.io`
(YAML likewise; v1alpha1 is still answered, with a deprecation Warning header). Anything else is
406 Not Acceptable, as there.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from scheduler import __version__

COMPONENT = "kube-scheduler"  # the component name kube-scheduler's pages carry
GROUP = "config.k8s.io"
VERSIONS = ("v1beta1", "v1alpha1")
DEPRECATED_VERSIONS = frozenset({"v1alpha1"})
DELIMITERS = (":", ": ", "=", " ")
TEXT = "text/plain; charset=utf-8"
STRUCTURED = {"application/json": "application/json", "application/yaml": "application/yaml"}
WARNING_HEADER = (
    '299 - "This version of the {page} endpoint is deprecated. Please use a newer version."'
)
_HEADER = (
    "\n{component} {page}\nWarning: This endpoint is not meant to be machine parseable, has no "
    "formatting compatibility guarantees and is for debugging purposes only.\n"
)


@dataclass(frozen=True)
class Page:
    """One response: status, content type, body and extra headers."""

    code: int
    content_type: str
    body: bytes
    headers: Mapping[str, str]


def flag_values(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """Every long flag and its value in effect (defaults included), written as Go prints them."""
    flags: dict[str, str] = {}
    for action in parser._actions:  # argparse has no public way to list its actions
        longs = [s for s in action.option_strings if s.startswith("--")]
        if not longs or action.dest in ("help", "version") or not hasattr(args, action.dest):
            continue
        flags[longs[0][2:]] = _go_value(getattr(args, action.dest))
    return flags


def _go_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_go_value(v) for v in value)
    return str(value)


def _unix_date(epoch: float) -> str:
    """Go's time.UnixDate ("Mon Jan _2 15:04:05 MST 2006") in local time."""
    local = time.localtime(epoch)
    return (
        time.strftime("%a %b ", local)
        + f"{local.tm_mday:2d}"
        + time.strftime(" %H:%M:%S %Z %Y", local)
    )


def _uptime(seconds: int) -> str:
    return f"{seconds // 3600} hr {(seconds // 60) % 60:02d} min {seconds % 60:02d} sec"


def _top_level_paths(paths: Sequence[str]) -> list[str]:
    """statusz lists each served path's first segment once, sorted."""
    return sorted({"/" + p.split("/")[1] for p in paths if len(p.split("/")) > 1 and p[1:]})


def _negotiate(accept: str, kind: str) -> tuple[str, str] | None:
    """("text", "") or (media type, version) for the Accept header; None: 406."""
    if not accept.strip():
        return "text", ""
    for raw in accept.split(","):
        media, *params = (part.strip() for part in raw.split(";"))
        options = dict(p.split("=", 1) for p in params if "=" in p)
        if options.get("q", "1").strip() in ("0", "0.0", "0.00", "0.000"):
            continue
        media = media.lower()
        if media in ("text/plain", "text/*", "*/*") and not options.keys() - {"q", "charset"}:
            return "text", ""
        if (
            media in STRUCTURED
            and options.get("as") == kind
            and options.get("g") == GROUP
            and options.get("v") in VERSIONS
        ):
            return STRUCTURED[media], options["v"]
    return None


def _not_acceptable() -> Page:
    accepted = ", ".join(["text/plain", *STRUCTURED])
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"only the following media types are accepted: {accepted}",
        "reason": "NotAcceptable",
        "code": 406,
    }
    return Page(406, "application/json", json.dumps(status).encode(), {})


def _render(
    page: str, kind: str, accept: str, text: str, data: dict[str, Any], name: str = COMPONENT
) -> Page:
    chosen = _negotiate(accept, kind)
    if chosen is None:
        return _not_acceptable()
    media, version = chosen
    if media == "text":
        header = _HEADER.format(component=name, page=page)
        return Page(200, TEXT, (header + text).encode(), {})
    obj = {"kind": kind, "apiVersion": f"{GROUP}/{version}", "metadata": {"name": name}, **data}
    headers = {}
    if version in DEPRECATED_VERSIONS:
        headers["Warning"] = WARNING_HEADER.format(page=page)
    if media == "application/yaml":
        body = yaml.safe_dump(obj, sort_keys=False).encode()
    else:
        body = json.dumps(obj).encode()
    return Page(200, media, body, headers)


def flagz(flags: Mapping[str, str], accept: str) -> Page:
    """The command-line flags in effect, sorted by name."""
    delim = random.choice(DELIMITERS)
    text = "".join(f"{name}{delim}{flags[name]}\n" for name in sorted(flags))
    return _render("flagz", "Flagz", accept, text, {"flags": dict(flags)})


def statusz(started: float, paths: Sequence[str], accept: str, now: float | None = None) -> Page:
    """Start time, uptime, runtime and binary versions and the served paths."""
    now = time.time() if now is None else now
    up = max(0, int(now - started))
    listed = _top_level_paths(paths)
    runtime = f"Python {platform.python_version()}"
    delim = random.choice(DELIMITERS)
    lines = [
        "",
        f"Started{delim} {_unix_date(started)}",
        f"Up{delim} {_uptime(up)}",
        f"Python version{delim} {platform.python_version()}",
        f"Binary version{delim} {__version__}",
        "",
        f"Paths{delim} {' '.join(listed)}" if listed else "",
        "",
    ]
    data = {
        "startTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "uptimeSeconds": up,
        # The field kube-scheduler names goVersion holds the runtime this process runs on.
        "goVersion": runtime,
        "binaryVersion": __version__,
        "paths": listed,
    }
    return _render("statusz", "Statusz", accept, "\n".join(lines), data)
