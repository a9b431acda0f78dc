"""KubeSchedulerConfiguration: defaults, plugin merging, and kube-scheduler-worded errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scheduler.config import ConfigError, KubeSchedulerConfiguration, load_config
from scheduler.config.defaults import default_plugins, merge_plugin_set, merge_plugins
from scheduler.config.load import parse_config_text
from scheduler.config.types import PluginEntry, PluginSet
from scheduler.features import FeatureGates
from scheduler.framework.profile_spec import PluginRef
from scheduler.plugins.registry import in_tree_registry

#: What the build registers: the in-tree plugins.
AVAILABLE = set(in_tree_registry())
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def parse(body: str) -> KubeSchedulerConfiguration:
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
        PluginRef("VolumeRestrictions"),
        PluginRef("NodeVolumeLimits"),
        PluginRef("VolumeBinding"),
        PluginRef("VolumeZone"),
        PluginRef("PodTopologySpread", 2),
        PluginRef("InterPodAffinity", 2),
        PluginRef("DynamicResources"),
        PluginRef("DefaultPreemption"),
        PluginRef("NodeResourcesBalancedAllocation", 1),
        PluginRef("ImageLocality", 1),
        PluginRef("DefaultBinder"),
        PluginRef("NodeDeclaredFeatures"),
    )
    assert spec.plugin_args == {}
    assert (cfg.client_connection.qps, cfg.client_connection.burst) == (50.0, 100)


def test_reconfigured_default_keeps_its_place_and_new_plugins_are_appended() -> None:
    cfg = parse_config_text(
        HEAD
        + """
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
""",
        AVAILABLE | {"Extra"},
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
        (
            "profiles:\n- schedulerName: x\n  plugin: {}\n",
            'strict decoding error: unknown field "profiles[0].plugin"',
        ),
        (
            "leaderElection:\n  leaseDuration: 5s\n",
            'leaderElection.leaseDuration: Invalid value: "10s":'
            " must be greater than `RenewDeadline`",
        ),
        (
            "leaderElection:\n  retryPeriod: soon\n",
            'leaderElection.retryPeriod: Invalid value: "soon": time: invalid duration "soon"',
        ),
        (
            "extenders:\n- urlPrefix: http://x\n",
            "extenders: Forbidden: extenders are not supported by kube-pysched",
        ),
        (
            "clientConnection:\n  contentType: application/vnd.kubernetes.protobuf\n",
            "clientConnection.contentType: Unsupported value:"
            ' "application/vnd.kubernetes.protobuf": supported values: "application/json"',
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n   "
            " queueSort:\n      enabled:\n      - name: Other\n",
            "profiles[1].plugins.queueSort: Invalid value: "
            '{"Enabled":[{"Name":"Other","Weight":0}],"Disabled":null}: '
            "must be the same for all profiles",
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


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "leaderElection:\n  resourceLock: endpoints\n",
            'leaderElection.resourceLock: Invalid value: "endpoints":'
            ' resourceLock value must be "leases"',
        ),
        (
            "leaderElection:\n  retryPeriod: 0s\n",
            'leaderElection.retryPeriod: Invalid value: "0s": must be greater than zero',
        ),
        (
            "leaderElection:\n  leaseDuration: 1m30s\n  renewDeadline: 1.5m\n",
            'leaderElection.leaseDuration: Invalid value: "1m30s":'
            " must be greater than `RenewDeadline`",
        ),
        (
            "clientConnection:\n  burst: -1\n",
            "clientConnection.burst: Invalid value: -1: must be non-negative",
        ),
        (
            "leaderElection:\n  leader: true\n",
            'strict decoding error: unknown field "leaderElection.leader"',
        ),
        (
            "clientConnection:\n  qpss: 3\n",
            'strict decoding error: unknown field "clientConnection.qpss"',
        ),
        (
            "profiles:\n- schedulerName: x\n  plugins:\n    filters: {}\n",
            'strict decoding error: unknown field "profiles[0].plugins.filters"',
        ),
        (
            "profiles:\n- schedulerName: x\n  plugins:\n    filter:\n      enabled:\n"
            "      - name: A\n        wieght: 1\n",
            'strict decoding error: unknown field "profiles[0].plugins.filter.enabled[0].wieght"',
        ),
        (
            "profiles:\n- schedulerName: x\n  pluginConfig:\n  - name: A\n    arg: {}\n",
            'strict decoding error: unknown field "profiles[0].pluginConfig[0].arg"',
        ),
        (
            "profiles:\n- schedulerName: x\n  plugins:\n    score:\n      enabled:\n"
            "      - name: EBSLimits\n",
            'profiles[0].plugins.score.enabled[0]: Invalid value: "EBSLimits": was invalid in'
            ' version "kubescheduler.config.k8s.io/v1"'
            ' (KubeSchedulerConfiguration is version "kubescheduler.config.k8s.io/v1")',
        ),
        (
            "profiles:\n- schedulerName: a\n  plugins: {queueSort: {enabled: [name: S]}}\n"
            "  pluginConfig:\n  - name: S\n    args: {x: 1}\n"
            "- schedulerName: b\n  plugins: {queueSort: {enabled: [name: S]}}\n"
            "  pluginConfig:\n  - name: S\n    args: {x: 2}\n",
            'profiles[1].pluginConfig.args: Invalid value: {"x":2}:'
            " queueSort must be the same for all profiles",
        ),
        (
            "profiles:\n- schedulerName: a\n  plugins:\n    queueSort:\n      enabled:\n"
            "      - name: A\n      - name: B\n",
            "profiles[0].plugins.queueSort.Enabled: Invalid value: 2:"
            " only one queue sort plugin can be enabled",
        ),
        ("parallelism: many\n", 'parallelism: Invalid value: "many": must be an integer'),
        (
            "delayCacheUntilActive: 1\n",
            "delayCacheUntilActive: Invalid value: 1: must be a boolean",
        ),
        ("profiles: {}\n", "profiles: Invalid value: {}: must be a list"),
        (
            "profiles:\n- schedulerName: x\n  plugins:\n    filter:\n      enabled:\n"
            "      - weight: 1\n",
            "profiles[0].plugins.filter.enabled[0].name: Required value",
        ),
        (
            "healthzBindAddress: 0.0.0.0:10251\n",
            'strict decoding error: unknown field "healthzBindAddress"',
        ),
        (
            "profiles:\n- schedulerName: x\n  plugins:\n    placementScore:\n"
            "      enabled: [{name: P}]\n",
            "profiles[0].plugins.placementScore: Forbidden:"
            " pod group scheduling is not supported by kube-pysched",
        ),
    ],
)
def test_more_invalid_fields(body: str, expected: str) -> None:
    assert expected in errors_of(body)


def test_config_error_message_has_one_line_per_problem_prefixed_with_the_file() -> None:
    with pytest.raises(ConfigError) as err:
        parse("parallelism: 0\npodInitialBackoffSeconds: 0\n")
    assert str(err.value).splitlines() == [
        "cfg.yaml: parallelism: Invalid value: 0: should be an integer value greater than zero",
        "cfg.yaml: podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
    ]


def test_duplicate_keys_are_rejected_with_their_line() -> None:
    assert errors_of("parallelism: 2\nparallelism: 3\n") == [
        'strict decoding error: line 4, column 1: key "parallelism" already set in map'
    ]


def test_leader_election_is_not_validated_when_disabled() -> None:
    cfg = parse("leaderElection:\n  leaderElect: false\n  leaseDuration: 1s\n")
    assert cfg.leader_election.leader_elect is False


def test_file_values_override_defaults(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        HEAD
        + """
parallelism: 4
percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
delayCacheUntilActive: true
leaderElection:
  leaseDuration: 1m
  renewDeadline: 30s
  retryPeriod: 500ms
  resourceName: mine
  resourceNamespace: sched
clientConnection:
  kubeconfig: /k
  qps: 7.5
  burst: 9
  contentType: application/json
profiles:
- schedulerName: a
  percentageOfNodesToScore: 50
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy: {type: MostAllocated}
- schedulerName: b
"""
    )
    cfg = load_config(str(path), AVAILABLE)
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (4, 30)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 20)
    assert cfg.delay_cache_until_active is True
    le = cfg.leader_election
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (60.0, 30.0, 0.5)
    assert (le.resource_name, le.resource_namespace, le.resource_lock) == (
        "mine",
        "sched",
        "leases",
    )
    cc = cfg.client_connection
    assert (cc.kubeconfig, cc.qps, cc.burst) == ("/k", 7.5, 9)
    a, b = (p.to_spec() for p in cfg.profiles)
    assert (a.scheduler_name, a.percentage_of_nodes_to_score) == ("a", 50)
    assert a.plugin_args == {"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}}
    assert (b.scheduler_name, b.percentage_of_nodes_to_score, b.plugin_args) == ("b", None, {})
    assert b.plugin_set("multiPoint") == a.plugin_set("multiPoint")


def test_single_profile_without_name_gets_ours_but_an_empty_name_is_an_error() -> None:
    assert parse("profiles:\n- {}\n").profiles[0].scheduler_name == "kube-pysched"
    assert "profiles[0].schedulerName: Required value" in errors_of(
        "profiles:\n- schedulerName: ''\n"
    )
    assert "profiles[0].schedulerName: Required value" in errors_of(
        "profiles:\n- {}\n- schedulerName: b\n"
    )


def test_empty_profile_list_gets_the_default_profile() -> None:
    cfg = parse("profiles: []\n")
    assert [p.scheduler_name for p in cfg.profiles] == ["kube-pysched"]


def test_to_dict_round_trips_through_the_parser() -> None:
    cfg = parse(
        "leaderElection:\n  leaseDuration: 90s\nprofiles:\n- schedulerName: a\n  plugins:\n"
        "    score:\n      disabled:\n      - name: '*'\n      enabled:\n"
        "      - name: NodeResourcesFit\n        weight: 3\n"
    )
    as_dict = cfg.to_dict()
    assert as_dict["leaderElection"]["leaseDuration"] == "1m30s"
    assert as_dict["profiles"][0]["plugins"]["score"] == {
        "enabled": [{"name": "NodeResourcesFit", "weight": 3}],
        "disabled": [{"name": "*"}],
    }
    again = parse_config_text(json.dumps(as_dict), AVAILABLE)
    assert again == cfg


def _names(entries: list[PluginEntry]) -> list[tuple[str, int | None]]:
    return [(p.name, p.weight) for p in entries]


def test_generic_workload_appends_gang_scheduling_last_as_kube_scheduler_does() -> None:
    on = FeatureGates({"GenericWorkload": True})
    names = _names(default_plugins(on)["multiPoint"].enabled)
    assert names[-2:] == [("NodeDeclaredFeatures", None), ("GangScheduling", None)]
    assert "GangScheduling" not in [
        name for name, _ in _names(default_plugins()["multiPoint"].enabled)
    ]
    text = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    cfg = parse_config_text(text, set(in_tree_registry()), features=on)
    assert cfg.profiles[0].plugins["multiPoint"].enabled[-1].name == "GangScheduling"


def test_default_list_is_kube_schedulers_whole_list_never_filtered() -> None:
    names = _names(default_plugins()["multiPoint"].enabled)
    assert names[:3] == [("SchedulingGates", None), ("PrioritySort", None), ("NodeName", None)]
    assert ("PodTopologySpread", 2) in names
    assert ("InterPodAffinity", 2) in names
    assert names[-3:] == [
        ("ImageLocality", 1),
        ("DefaultBinder", None),
        ("NodeDeclaredFeatures", None),
    ]
    dra = [name for name, _ in names].index("DynamicResources")
    assert names[dra + 1] == ("DefaultPreemption", None)


def test_a_profile_enabling_a_plugin_this_build_lacks_is_an_error_naming_plugin_and_profile() -> (
    None
):
    errors = errors_of(
        """
profiles:
- schedulerName: mine
  plugins:
    filter:
      enabled: [{name: FancyPlugin}]
"""
    )
    assert errors == [
        'profiles[0].plugins.filter: Invalid value: "FancyPlugin": no plugin of this name in '
        "this build of kube-pysched (profile 'mine')"
    ]


def test_the_default_profile_needs_every_default_plugin_registered() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(None, AVAILABLE - {"VolumeBinding"})
    assert '"VolumeBinding": no plugin of this name' in str(err.value)


def test_merge_duplicate_custom_entries_last_replaces_the_default_earlier_ones_are_appended() -> (
    None
):
    default = PluginSet(enabled=[PluginEntry("A"), PluginEntry("B", 3), PluginEntry("C")])
    custom = PluginSet(
        enabled=[PluginEntry("X"), PluginEntry("B", 5), PluginEntry("B", 7)],
        disabled=[PluginEntry("C")],
    )
    merged = merge_plugin_set(default, custom)
    assert _names(merged.enabled) == [("A", None), ("B", 7), ("X", None), ("B", 5)]
    assert _names(merged.disabled) == [("C", None)]


def test_merge_keeps_the_defaults_disabled_list_and_star_disables_everything() -> None:
    default = PluginSet(enabled=[PluginEntry("A"), PluginEntry("B")], disabled=[PluginEntry("Z")])
    merged = merge_plugin_set(default, PluginSet(disabled=[PluginEntry("A")]))
    assert _names(merged.enabled) == [("B", None)]
    assert _names(merged.disabled) == [("A", None), ("Z", None)]
    star = merge_plugin_set(
        default, PluginSet(enabled=[PluginEntry("B", 2)], disabled=[PluginEntry("*")])
    )
    assert _names(star.enabled) == [("B", 2)]


def test_merge_without_custom_plugins_returns_the_defaults_and_keeps_only_used_points() -> None:
    defaults = default_plugins()
    assert merge_plugins(defaults, None) is defaults
    merged = merge_plugins(
        defaults, {"filter": PluginSet(enabled=[PluginEntry("Mine")]), "score": PluginSet()}
    )
    assert set(merged) == {"multiPoint", "filter"}
    assert merged["multiPoint"] == defaults["multiPoint"]


def test_disabled_at_multipoint_and_enabled_at_one_point() -> None:
    cfg = parse(
        """
profiles:
- schedulerName: a
  plugins:
    multiPoint:
      disabled: [{name: NodeAffinity}]
    filter:
      enabled: [{name: NodeAffinity}]
"""
    )
    spec = cfg.profiles[0].to_spec()
    assert PluginRef("NodeAffinity", 2) not in spec.plugin_set("multiPoint").enabled
    assert spec.plugin_set("multiPoint").disabled == (PluginRef("NodeAffinity"),)
    assert spec.plugin_set("filter").enabled == (PluginRef("NodeAffinity"),)


def test_pod_group_points_may_be_named_without_enabling_anything() -> None:
    cfg = parse(
        "profiles:\n- schedulerName: x\n  plugins:\n    podGroupPostFilter:\n"
        "      disabled: [{name: '*'}]\n"
    )
    assert set(cfg.profiles[0].plugins) == {"multiPoint"}
