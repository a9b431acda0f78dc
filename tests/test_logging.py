"""Log lines are JSON with the pod= convention, and debug lines cost nothing when disabled."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from scheduler.logging import (
    configure_logging,
    debug_enabled,
    level_for_verbosity,
    pod_fields,
    pod_key,
    reset_logging,
)


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    """configure_logging binds the (captured) stderr; later tests must not log into it."""
    yield
    reset_logging()


def test_json_lines_carry_pod_and_level(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", 0)
    structlog.get_logger("t").info("attempting", pod="ns/p", node="n1")
    structlog.get_logger("t").debug("hidden", pod="ns/p")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert len(lines) == 1
    assert lines[0]["event"] == "attempting"
    assert (lines[0]["pod"], lines[0]["node"], lines[0]["level"]) == ("ns/p", "n1", "info")
    assert lines[0]["timestamp"].endswith("Z")


def test_verbosity_4_enables_debug(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", 4)
    assert debug_enabled()
    structlog.get_logger("t").debug("shown", pod="ns/p")
    assert json.loads(capsys.readouterr().err)["event"] == "shown"


def test_hot_paths_see_whether_debug_lines_are_written() -> None:
    assert debug_enabled()  # structlog's defaults write every level
    configure_logging("json", 0)
    assert not debug_enabled()
    reset_logging()
    assert debug_enabled()


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown log format"):
        configure_logging("xml", 0)


class _Pod:
    namespace = "ns"
    name = "p"


class _RenderProbe:
    """Records when the JSON renderer turns it into text."""

    def __init__(self) -> None:
        self.rendered = 0

    def __repr__(self) -> str:
        self.rendered += 1
        return "probe"


def test_logger_name_and_pod_fields_helper() -> None:
    out = io.BytesIO()
    configure_logging("json", 0, stream=out)
    structlog.get_logger("scheduler.schedule_one").info("bound", **pod_fields(_Pod(), node="n2"))
    line = json.loads(out.getvalue())
    assert (line["logger"], line["pod"], line["node"]) == ("scheduler.schedule_one", "ns/p", "n2")
    assert pod_fields(_Pod()) == {"pod": "ns/p"}
    assert pod_key(_Pod()) == "ns/p"


def test_disabled_debug_does_not_render_its_arguments() -> None:
    out = io.BytesIO()
    configure_logging("json", 0, stream=out)
    log = structlog.get_logger("t")
    probe = _RenderProbe()
    log.debug("per pod detail", detail=probe)
    assert (out.getvalue(), probe.rendered) == (b"", 0)
    log.info("shown", detail=probe)
    assert (json.loads(out.getvalue())["detail"], probe.rendered) == ("probe", 1)


def test_console_format_is_one_readable_line() -> None:
    out = io.BytesIO()
    configure_logging("console", 0, stream=out)
    structlog.get_logger("t").warning("no fit", pod="ns/p")
    text = out.getvalue().decode()
    assert text.count("\n") == 1
    assert "no fit" in text and "pod=ns/p" in text and "warning" in text
    assert not text.lstrip().startswith("{")


def test_verbosity_levels() -> None:
    assert [level_for_verbosity(v) for v in (0, 3, 4, 10)] == [
        logging.INFO,
        logging.INFO,
        logging.DEBUG,
        logging.DEBUG,
    ]


def test_stderr_without_a_byte_buffer_still_gets_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    text = io.StringIO()
    monkeypatch.setattr("sys.stderr", text)
    configure_logging("json", 0)
    structlog.get_logger("t").info("to text", pod="ns/p")
    assert json.loads(text.getvalue())["pod"] == "ns/p"
