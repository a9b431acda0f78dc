"""Log lines are JSON with the pod= convention, and debug lines cost nothing when disabled."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import structlog

from scheduler.logging import configure_logging


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    """configure_logging binds the (captured) stderr; later tests must not log into it."""
    yield
    structlog.reset_defaults()


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
    structlog.get_logger("t").debug("shown", pod="ns/p")
    assert json.loads(capsys.readouterr().err)["event"] == "shown"


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown log format"):
        configure_logging("xml", 0)
