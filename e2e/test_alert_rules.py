"""The generated alerting rules through promtool (Debian's prometheus package, e2e/prometheus.py).

`promtool check rules` on the plain rules file and the chart's copy, and `promtool test rules`
on the generated unit tests (`dashboards/alerts.py`: for every alert, input series with the
alerts expected to fire and cases where it must stay silent). No cluster is needed.
"""

from __future__ import annotations

import subprocess

import pytest

from dashboards import alerts, outputs
from e2e import prometheus
from e2e.pysched import REPO_ROOT


def _promtool(*args: str) -> str:
    binaries = prometheus.require()
    result = subprocess.run(
        [str(binaries.promtool), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"promtool {' '.join(args)}:\n{output}"
    return output


@pytest.mark.parametrize("path", [outputs.DEPLOY_RULES, outputs.CHART_RULES], ids=str)
def test_promtool_check_rules(path: object) -> None:
    output = _promtool("check", "rules", str(path))
    assert f"SUCCESS: {len(alerts.ALERTS)} rules found" in output, output


def test_promtool_unit_tests_pass() -> None:
    output = _promtool("test", "rules", str(outputs.DEPLOY_RULE_TESTS))
    assert "SUCCESS" in output, output


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    for alert in alerts.ALERTS:
        assert any(case.fires for case in alert.tests), f"{alert.name}: no case where it fires"
        assert any(not case.fires for case in alert.tests), f"{alert.name}: no silent case"
