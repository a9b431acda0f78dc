"""Headless Chromium driven through the DevTools protocol, to open a page as a reader would.

The simulation's HTML report is checked in a real browser, not only parsed: a script error, a
console error or a chart that draws nothing are what a reader would see and a parser cannot.
Chromium (Debian's `chromium`, see e2e/system_packages.py) runs with
`--remote-debugging-pipe`: the protocol's JSON messages, each ended by a NUL byte, go in on
the child's fd 3 and come back on its fd 4. No port, no websocket library, nothing shared with
other tests; each browser has its own temporary profile.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e import system_packages

PACKAGE = "chromium"
TIMEOUT = 60.0

#: Every <svg> of the page, its box and how many of its shapes have a non-empty box.
CHARTS_JS = """
Array.from(document.querySelectorAll('svg')).map((svg) => {
  const box = svg.getBoundingClientRect();
  const shapes = Array.from(
    svg.querySelectorAll('rect, path, circle, ellipse, line, polygon, polyline'));
  const drawn = shapes.filter((s) => {
    const b = s.getBoundingClientRect();
    return b.width > 0 && b.height > 0;
  });
  return {label: svg.getAttribute('aria-label') || '', width: box.width,
          height: box.height, shapes: shapes.length, drawn: drawn.length};
})
"""


class BrowserError(RuntimeError):
    """Chromium exited, answered with an error, or did not answer in time."""


@dataclass
class Chart:
    label: str
    width: float
    height: float
    shapes: int
    drawn: int


@dataclass
class PageView:
    """What a page did once loaded: its errors, its charts and a full-page screenshot."""

    errors: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    screenshot: bytes = b""
    size: tuple[int, int] = (0, 0)

    def problems(self) -> list[str]:
        """Each way the page fails a reader: errors, and charts empty or with nothing drawn."""
        out = list(self.errors)
        for i, chart in enumerate(self.charts):
            name = f"chart {i} ({chart.label or 'unlabelled'})"
            if chart.width <= 0 or chart.height <= 0:
                out.append(f"{name} has an empty box {chart.width}x{chart.height}")
            if chart.drawn == 0:
                out.append(f"{name} draws nothing ({chart.shapes} shapes, none with a size)")
        return out


def _above_4(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(fd)
    return moved


class Chromium:
    """One headless browser process; `open(path)` loads a file in a new tab and inspects it.
    `close()` ends it and removes its profile."""

    def __init__(self, workdir: Path) -> None:
        """The profile goes in `workdir`/profile and Chromium's log in `workdir`/chromium.log."""
        system_packages.install([PACKAGE])
        self.profile = workdir / "profile"  # removed by close()
        self.log = workdir / "chromium.log"
        # Above 4, so that moving them onto 3 and 4 in the child never meets one already there.
        to_child, self._write_fd = (_above_4(fd) for fd in os.pipe())
        self._read_fd, from_child = (_above_4(fd) for fd in os.pipe())
        argv = [
            "chromium",
            "--headless=new",
            "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
            "--remote-debugging-pipe",
            f"--user-data-dir={self.profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--window-size=1280,900",
            "about:blank",
        ]

        # The protocol pipe must be the child's fds 3 and 4 exactly, which pass_fds cannot
        # arrange: bash moves them there (they are above 4, so nothing is overwritten; dash
        # takes single-digit fds only).
        shell = f'exec "$@" 3<&{to_child} 4>&{from_child} {to_child}<&- {from_child}>&-'
        with self.log.open("wb") as log:  # a file: a full stderr pipe would stall Chromium
            self.process = subprocess.Popen(
                ["bash", "-c", shell, "bash", *argv],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(to_child, from_child),
            )
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                self.call("Browser.close")
                self.process.wait(timeout=TIMEOUT)
        except (BrowserError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        finally:
            os.close(self._write_fd)
            os.close(self._read_fd)
            shutil.rmtree(self.profile, ignore_errors=True)

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._read_fd], [], [], left)
            if ready:
                chunk = os.read(self._read_fd, 1 << 20)
                if not chunk:
                    raise BrowserError(f"Chromium exited; its log ends:\n{self._log_tail()}")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        decoded: dict[str, Any] = json.loads(message)
        return decoded

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Sends one command and returns its result; events read meanwhile go to `events`."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._write_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = self._receive(deadline)
            if reply.get("id") != self._next_id:
                self.events.append(reply)
                continue
            if "error" in reply:
                raise BrowserError(f"{method}: {reply['error']}")
            result: dict[str, Any] = reply.get("result", {})
            return result

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        """The first event `method` of `session` not yet waited for (read if not yet come)."""
        deadline = time.monotonic() + TIMEOUT
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    self.events.remove(event)
                    return event
            seen = len(self.events)
            self.events.append(self._receive(deadline))

    def open(self, path: Path) -> PageView:
        """Loads `path` in a new tab; returns its errors, charts and a full-page screenshot."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Inspector"):
            self.call(f"{domain}.enable", session)
        first = len(self.events)
        navigated = self.call("Page.navigate", session, url=path.resolve().as_uri())
        if navigated.get("errorText"):
            raise BrowserError(f"{path}: {navigated['errorText']}")
        self.wait_event("Page.loadEventFired", session)
        value = self.call("Runtime.evaluate", session, expression=CHARTS_JS, returnByValue=True)
        if "exceptionDetails" in value:
            raise BrowserError(f"inspecting the charts: {value['exceptionDetails']}")
        view = PageView(charts=[Chart(**c) for c in value["result"]["value"]])
        metrics = self.call("Page.getLayoutMetrics", session)["cssContentSize"]
        width, height = int(metrics["width"]), int(metrics["height"])
        shot = self.call(
            "Page.captureScreenshot",
            session,
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )
        view.screenshot = base64.b64decode(shot["data"])
        view.size = (width, height)
        view.errors = errors([e for e in self.events[first:] if e.get("sessionId") == session])
        self.call("Target.closeTarget", targetId=target)
        return view


def errors(events: list[dict[str, Any]]) -> list[str]:
    """The script errors and console errors among a tab's protocol events."""
    out = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            out.append(f"script error: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            out.append(f"console.{params['type']}: {args}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            out.append(f"log error ({entry['source']}): {entry['text']}")
        elif method == "Inspector.targetCrashed":
            out.append("the page crashed")
    return out
