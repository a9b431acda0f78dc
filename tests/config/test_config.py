"""KubeSchedulerConfiguration: defaults, plugin merging, and kube-scheduler-worded errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.config import ConfigError, load_config
from scheduler.config.load import parse_config_text
from scheduler.framework.profile_spec import PluginRef

AVAILABLE = {
    "SchedulingGates",
    "PrioritySort",
    "NodeName",
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "DefaultBinder",
}
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def parse(body: str) -> object:
    return parse_config_text(HEAD + body, AVAILABLE, source="cfg.yaml")


def errors_of(body: str) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse(body)
    return err.value.errors


def test_no_file_gives_kube_scheduler_defaults_with_our_profile_name() -> None:
    cfg = load_config(None, AVAILABLE)
    assert cfg.parallelism == 16
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.percentage_of_nodes_to_score == 0
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        True,
        15.0,
        10.0,
        2.0,
    )
    assert (le.resource_name, le.resource_namespace) == ("kube-pysched", "kube-system")
    assert [p.scheduler_name for p in cfg.profiles] == ["kube-pysched"]
    spec = cfg.profiles[0].to_spec()
    assert spec.plugin_set("multiPoint").enabled == (
        PluginRef("SchedulingGates"),
        PluginRef("PrioritySort"),
        PluginRef("NodeName"),
        PluginRef("NodeUnschedulable"),
        PluginRef("TaintToleration", 3),
        PluginRef("NodeAffinity", 2),
        PluginRef("NodePorts"),
        PluginRef("NodeResourcesFit", 1),
        PluginRef("NodeResourcesBalancedAllocation", 1),
        PluginRef("DefaultBinder"),
    )


def test_reconfigured_default_keeps_its_place_and_new_plugins_are_appended() -> None:
    cfg = parse(
        """
profiles:
- schedulerName: a
  plugins:
    multiPoint:
      enabled:
      - name: Extra
      - name: TaintToleration
        weight: 9
      disabled:
      - name: NodePorts
"""
    )
    names = [(r.name, r.weight) for r in cfg.profiles[0].to_spec().plugin_set("multiPoint").enabled]
    assert names[4] == ("TaintToleration", 9)
    assert ("NodePorts", 0) not in names
    assert names[-1] == ("Extra", 0)


def test_disabling_star_drops_every_default_at_that_point() -> None:
    cfg = parse(
        """
profiles:
- schedulerName: a
  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: NodeResourcesFit
        weight: 2
"""
    )
    score = cfg.profiles[0].to_spec().plugin_set("score")
    assert [r.name for r in score.disabled] == ["*"]
    assert score.enabled == (PluginRef("NodeResourcesFit", 2),)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "podInitialBackoffSeconds: 0\n",
            "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
        ),
        (
            "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
            "podMaxBackoffSeconds: Invalid value: 2: must be greater"
            " than or equal to PodInitialBackoffSeconds",
        ),
        (
            "percentageOfNodesToScore: 120\n",
            "percentageOfNodesToScore: Invalid value: 120: not in valid range [0-100]",
        ),
        (
            "parallelism: 0\n",
            "parallelism: Invalid value: 0: should be an integer value greater than zero",
        ),
        (
            "profiles:\n- schedulerName: x\n- schedulerName: x\n",
            'profiles[1].schedulerName: Duplicate value: "x"',
        ),
        ("profiles:\n- schedulerName: x\n- {}\n", "profiles[1].schedulerName: Required value"),
        (
            "profiles:\n- schedulerName: x\n  percentageOfNodesToScore: -1\n",
            "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
        ),
        (
            "profiles:\n- schedulerName: x\n  pluginConfig:\n  - name:"
            " NodeAffinity\n  - name: NodeAffinity\n",
            'profiles[0].pluginConfig[1]: Duplicate value: "NodeAffinity"',
        ),
        ("profiles:\n- schedulerName: x\n  plugin: {}\n", 'unknown field "profiles[0].plugin"'),
        (
            "leaderElection:\n  leaseDuration: 5s\n",
            'leaderElection.leaseDuration: Invalid value: "10s":'
            " LeaseDuration must be greater than RenewDeadline",
        ),
        (
            "leaderElection:\n  retryPeriod: soon\n",
            'leaderElection.retryPeriod: Invalid value: "soon": time: invalid duration "soon"',
        ),
        (
            "extenders:\n- urlPrefix: http://x\n",
            'extenders: Invalid value: "...": extenders are not supported by kube-pysched',
        ),
        (
            "clientConnection:\n  contentType: application/vnd.kubernetes.protobuf\n",
            "clientConnection.contentType: Unsupported value:"
            ' "application/vnd.kubernetes.protobuf": supported values: "application/json"',
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n   "
            " queueSort:\n      enabled:\n      - name: Other\n",
            "profiles[1].plugins.queueSort: Invalid value: must be the same for all profiles",
        ),
    ],
)
def test_invalid_fields_are_named_like_kube_scheduler(body: str, expected: str) -> None:
    assert expected in errors_of(body)


def test_every_problem_is_reported_at_once() -> None:
    errors = errors_of("parallelism: -1\npercentageOfNodesToScore: 101\nbogus: 1\n")
    assert len(errors) == 3


def test_wrong_kind_and_yaml_syntax_errors() -> None:
    with pytest.raises(ConfigError, match="unsupported apiVersion/kind v1/Pod"):
        parse_config_text("apiVersion: v1\nkind: Pod\n", AVAILABLE)
    with pytest.raises(
        ConfigError,
        match=r"YAML syntax error: line 4, column 1: did not find expected node content",
    ):
        parse_config_text(HEAD + "profiles: [\n", AVAILABLE)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(str(tmp_path / "nope.yaml"), AVAILABLE)
