"""The dashboard and the alerting rules against a real Prometheus scraping kube-pysched.

kube-pysched runs with its secure port (HTTPS, delegated authentication and authorization) and
leader election; a ServiceAccount bound to a metrics-reader ClusterRole (as the chart's
`<release>-metrics-reader`) gets a token from the TokenRequest API, and a real Prometheus
(Debian's package, `e2e/prometheus.py`) scrapes kube-pysched over HTTPS with that token every
second, loads `deploy/prometheus/kube-pysched.rules.yaml` and evaluates it every second. On the
local control plane it also scrapes the control plane's kube-scheduler (CA-verified): the same
metric names under job="kube-scheduler", which the dashboard's `$job` list must leave out.

A small workload: pods bound, one that never fits (NodeResourcesFit), a preemption, and one pod
whose binding a ValidatingAdmissionPolicy denies (binding errors, retried with backoff); once
Prometheus has scraped all of that, a second wave of pods (a counter's increase is visible to
rate() only on a series Prometheus has already seen). Then:

* every query of the generated dashboard JSON (its `$job`, `$instance` and `$__rate_interval`
  substituted: kube-pysched, `.*`, 5m) returns at least one finite sample, and each
  `label_values` variable finds its label (`$job`: kube-pysched only);
* every alert's `signal` (the expression without its threshold, `dashboards/alerts.py`)
  returns data; every rule is loaded and evaluated without error (health ok);
  KubePyschedUnschedulablePods (for NodeResourcesFit, among others) and KubePyschedSchedulingErrors
  reach `pending` (their condition holds on real data; their `for` is far longer than the
  test), while KubePyschedDown and KubePyschedNoLeader stay inactive.

Every wait polls with a deadline; nothing sleeps for synchronisation and no duration is
asserted.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from dashboards import alerts, dashboard, outputs
from e2e import prometheus
from e2e.cluster import ControlPlane, ExternalCluster, wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.cluster.ports import LOOPBACK
from e2e.preemption_scenarios import create_priority_classes, delete_priority_classes
from e2e.pysched import REPO_ROOT, Pysched, default_config
from e2e.test_scheduling import wait_bound, wait_unschedulable
from e2e.workload import pod_manifest

RULES = REPO_ROOT / outputs.DEPLOY_RULES
BOARD = REPO_ROOT / outputs.DEPLOY_DASHBOARD
VARIABLES = {"job": "kube-pysched", "instance": ".*", "__rate_interval": "5m"}
BIND_ERROR_PREFIX = "bind-error"
#: Long enough for a cold Prometheus and a few scheduling retries; never a measured bound.
DEADLINE = 180.0


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def scraper_token(
    api_client: k8s.ApiClient, core_v1: k8s.CoreV1Api, namespace: str
) -> Iterator[str]:
    """A token of ServiceAccount `prometheus`, bound to a metrics-reader ClusterRole."""
    rbac = k8s.RbacAuthorizationV1Api(api_client)
    name = _unique("kube-pysched-e2e-metrics-reader")
    rbac.create_cluster_role(
        k8s.V1ClusterRole(
            metadata=k8s.V1ObjectMeta(name=name),
            rules=[k8s.V1PolicyRule(non_resource_urls=["/metrics"], verbs=["get"])],
        )
    )
    try:
        core_v1.create_namespaced_service_account(
            namespace, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name="prometheus"))
        )
        rbac.create_cluster_role_binding(
            k8s.V1ClusterRoleBinding(
                metadata=k8s.V1ObjectMeta(name=name),
                role_ref=k8s.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=name
                ),
                subjects=[
                    k8s.RbacV1Subject(kind="ServiceAccount", name="prometheus", namespace=namespace)
                ],
            )
        )
        request = k8s.AuthenticationV1TokenRequest(
            spec=k8s.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        )
        token: str = core_v1.create_namespaced_service_account_token(
            "prometheus", namespace, request
        ).status.token
        yield token
    finally:
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            try:
                delete(name)
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise


@pytest.fixture
def priorities(api_client: k8s.ApiClient) -> Iterator[dict[int, str]]:
    names = create_priority_classes(api_client, (100, 1000))
    try:
        yield names
    finally:
        delete_priority_classes(api_client, names)


@pytest.fixture
def binding_denied(
    api_client: k8s.ApiClient, core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory
) -> Iterator[None]:
    """A ValidatingAdmissionPolicy denying the binding of this namespace's pods named
    `bind-error*`: kube-pysched's binding fails (result="error") and is retried with backoff.
    Yields once a binding is seen denied."""
    admission = k8s.AdmissionregistrationV1Api(api_client)
    name = _unique("e2e-deny-binding")
    scope = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    admission.create_validating_admission_policy(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "namespaceSelector": scope,
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pods/binding"],
                        }
                    ],
                },
                "validations": [
                    {
                        "expression": f"!object.metadata.name.startsWith('{BIND_ERROR_PREFIX}')",
                        "message": "binding denied by the e2e test",
                        "reason": "Forbidden",
                    }
                ],
            },
        }
    )
    try:
        admission.create_validating_admission_policy_binding(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": name},
                "spec": {
                    "policyName": name,
                    "validationActions": ["Deny"],
                    "matchResources": {"namespaceSelector": scope},
                },
            }
        )
        probe_node = kwok_nodes(1, labels={"probe": name})[0].metadata.name

        def denied() -> bool | str:
            # A pod no scheduler owns, bound by hand: once the policy is in force the binding
            # is refused (a probe bound before that is deleted, the next one tried).
            probe = _unique(f"{BIND_ERROR_PREFIX}-probe")
            core_v1.create_namespaced_pod(
                namespace, pod_manifest(probe, scheduler_name="nobody", cpu=None, memory=None)
            )
            try:
                core_v1.create_namespaced_pod_binding(
                    probe,
                    namespace,
                    k8s.V1Binding(
                        metadata=k8s.V1ObjectMeta(name=probe),
                        target=k8s.V1ObjectReference(kind="Node", name=probe_node),
                    ),
                    _preload_content=False,  # the answer is a Status, not a Binding
                )
            except k8s.ApiException as exc:
                if exc.status in (403, 422):
                    return True
                raise
            finally:
                core_v1.delete_namespaced_pod(probe, namespace, grace_period_seconds=0)
            return "a binding was still allowed"

        wait_for(denied, timeout=60, what="the binding policy in force")
        yield
    finally:
        for delete in (
            admission.delete_validating_admission_policy_binding,
            admission.delete_validating_admission_policy,
        ):
            try:
                delete(name)
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise


def _prometheus_config(
    token_file: Path, pysched: Pysched, cluster: ControlPlane | ExternalCluster
) -> dict[str, Any]:
    jobs: list[dict[str, Any]] = [
        {
            "job_name": "kube-pysched",
            "scheme": "https",
            # The generated serving certificate is signed by a throwaway CA (as in a cluster).
            "tls_config": {"insecure_skip_verify": True},
            "authorization": {"credentials_file": str(token_file)},
            "static_configs": [{"targets": [pysched.secure_url.removeprefix("https://")]}],
        }
    ]
    if isinstance(cluster, ControlPlane):
        jobs.append(
            {
                "job_name": "kube-scheduler",
                "scheme": "https",
                "tls_config": {"ca_file": str(cluster.ca_cert)},
                "authorization": {"credentials_file": str(token_file)},
                "static_configs": [{"targets": [f"{LOOPBACK}:{cluster.ports['kube-scheduler']}"]}],
            }
        )
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": jobs,
    }


def _small_pods(
    core: k8s.CoreV1Api, namespace: str, scheduler_name: str, group: str, names: list[str]
) -> None:
    for name in names:
        core.create_namespaced_pod(
            namespace,
            pod_manifest(name, scheduler_name=scheduler_name, node_selector={"g": f"{group}-big"}),
        )
    wait_bound(core, namespace, names)


def _first_wave(
    core: k8s.CoreV1Api,
    namespace: str,
    scheduler_name: str,
    group: str,
    priorities: dict[int, str],
) -> int:
    """40 small pods, two low-priority pods filling a 2-CPU node, one pod that never fits, a
    high-priority pod preempting a low one, one pod whose binding is denied. Returns the number
    of pods bound."""
    small = [f"small-{i}" for i in range(40)]
    _small_pods(core, namespace, scheduler_name, group, small)
    low = ["low-0", "low-1"]
    for name in low:
        core.create_namespaced_pod(
            namespace,
            pod_manifest(
                name,
                scheduler_name=scheduler_name,
                cpu="900m",
                node_selector={"g": group},
                priority_class=priorities[100],
            ),
        )
    wait_bound(core, namespace, low)
    core.create_namespaced_pod(
        namespace,
        pod_manifest("huge", scheduler_name=scheduler_name, cpu="20", node_selector={"g": group}),
    )
    wait_unschedulable(core, namespace, "huge")
    core.create_namespaced_pod(
        namespace,
        pod_manifest(
            "high",
            scheduler_name=scheduler_name,
            cpu="900m",
            node_selector={"g": group},
            priority_class=priorities[1000],
        ),
    )
    wait_bound(core, namespace, ["high"])
    core.create_namespaced_pod(
        namespace,
        pod_manifest(
            f"{BIND_ERROR_PREFIX}-0",
            scheduler_name=scheduler_name,
            node_selector={"g": f"{group}-big"},
        ),
    )
    return len(small) + len(low) + 1


def _finite(samples: list[dict[str, Any]]) -> bool:
    return any(math.isfinite(float(s["value"][1])) for s in samples)


def _poll_queries(
    prom: prometheus.PrometheusServer, queries: dict[str, str], guard: Callable[[], None]
) -> None:
    """Waits until every query returns a finite sample; fails naming the ones that do not."""
    missing = dict(queries)

    def all_answered() -> bool | str:
        for what, expr in list(missing.items()):
            if _finite(prom.query(expr)):
                del missing[what]
        return not missing or f"{len(missing)} without data: " + "; ".join(
            f"{w}: {e}" for w, e in missing.items()
        )

    wait_for(all_answered, timeout=DEADLINE, interval=1.0, what="data for every query", guard=guard)


@pytest.fixture
def prometheus_binaries() -> prometheus.Binaries:
    """Debian's prometheus package (installed when missing), before any cluster object."""
    return prometheus.require()


def test_dashboard_queries_and_alerts_against_real_prometheus(
    prometheus_binaries: prometheus.Binaries,
    cluster: ControlPlane | ExternalCluster,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Callable[..., Pysched],
    scraper_token: str,
    priorities: dict[int, str],
    binding_denied: None,
    tmp_path: Path,
) -> None:
    board = json.loads(BOARD.read_text())
    scheduler_name, group = _unique("dash"), _unique("g")
    kwok_nodes(1, cpu="2", labels={"g": group})
    kwok_nodes(1, cpu="32", pods=250, labels={"g": f"{group}-big"})

    config = default_config(
        leaderElection={
            "leaderElect": True,
            "resourceNamespace": namespace,
            "resourceName": _unique("lease"),
        },
        profiles=[{"schedulerName": scheduler_name}],
    )
    proc = pysched(config, secure=True)
    token_file = tmp_path / "token"
    token_file.write_text(scraper_token)
    workdir = tmp_path / "prometheus"
    workdir.mkdir()
    prom = prometheus.PrometheusServer(
        prometheus_binaries.prometheus, workdir, _prometheus_config(token_file, proc, cluster)
    )
    prom.start()
    try:

        def guard() -> None:
            if not proc.alive():
                raise RuntimeError(f"kube-pysched exited:\n{proc.tail()}")
            if prom.process is None or not prom.process.alive():
                raise RuntimeError(f"prometheus exited:\n{prom.tail()}")

        def targets_up() -> bool | str:
            active = prom.api("targets")["activeTargets"]
            expected = len(prom.config["scrape_configs"])
            bad = [
                f"{t['labels']['job']}: {t['health']} {t['lastError']}"
                for t in active
                if t["health"] != "up"
            ]
            return (len(active) == expected and not bad) or (
                f"{len(active)} of {expected} targets, not up: {bad}"
            )

        wait_for(targets_up, timeout=DEADLINE, what="every scrape target up", guard=guard)

        # Prometheus sees a counter's increase only between two scrapes of an existing series,
        # and labelled series (SLI by attempts, plugin latency, ...) appear with their first
        # observation. So: a first wave creates every series, Prometheus must have scraped all
        # of it, then a second wave of pods adds to the same series (plugin latency is recorded
        # for 10% of the cycles: 60 more cycles, plus the denied pod's retries).
        bound = _first_wave(core_v1, namespace, scheduler_name, group, priorities)

        def first_wave_scraped() -> bool | str:
            sli = prom.query(
                f"sum(scheduler_pod_scheduling_sli_duration_seconds_count{{{alerts.JOB}}})"
            )
            seen = float(sli[0]["value"][1]) if sli else 0.0
            return seen >= bound or f"{seen:.0f} of {bound} bindings scraped"

        wait_for(first_wave_scraped, timeout=DEADLINE, what="the first wave scraped", guard=guard)
        _small_pods(core_v1, namespace, scheduler_name, group, [f"second-{i}" for i in range(60)])

        # Every panel query, with Grafana's variables substituted.
        queries = {
            f"panel {title!r} #{i}": dashboard.substitute(expr, VARIABLES)
            for i, (title, expr) in enumerate(dashboard.panel_queries(board))
        }
        assert len(queries) >= 20, queries
        # Every alert's expression without its threshold.
        queries.update({f"alert {a.name}": a.signal for a in alerts.ALERTS})
        _poll_queries(prom, queries, guard)

        # The template variables: $job lists kube-pysched and not the kube-scheduler job that
        # exports the same scheduler_* names; $instance finds the target.
        for name, selector, label in dashboard.variable_queries(board):
            values = {
                s["metric"].get(label)
                for s in prom.query(dashboard.substitute(selector, VARIABLES))
            }
            expected = {"kube-pysched"} if name == "job" else {proc.secure_url[8:]}
            assert values == expected, (name, selector, values)
        # Every rule loaded and evaluated without error; states where the workload decides.
        wanted = {a.name for a in alerts.ALERTS}
        states: dict[str, Any] = {}

        def rules_evaluated() -> bool | str:
            groups = prom.api("rules", type="alert")["groups"]
            rules = {r["name"]: r for g in groups for r in g["rules"]}
            states.clear()
            states.update(rules)
            if set(rules) != wanted:
                return f"rules loaded: {sorted(rules)}"
            errors = {n: r["lastError"] for n, r in rules.items() if r.get("lastError")}
            assert not errors, f"rules failing to evaluate: {errors}"
            assert all(r["health"] in ("ok", "unknown") for r in rules.values()), rules
            unevaluated = [n for n, r in rules.items() if r["health"] != "ok"]
            if unevaluated:
                return f"not evaluated yet: {unevaluated}"
            pending = {n: r["state"] for n, r in rules.items()}
            if pending["KubePyschedUnschedulablePods"] == "inactive":
                return "KubePyschedUnschedulablePods not pending yet"
            if pending["KubePyschedSchedulingErrors"] == "inactive":
                return "KubePyschedSchedulingErrors not pending yet"
            return True

        wait_for(
            rules_evaluated, timeout=DEADLINE, interval=1.0, what="rules evaluated", guard=guard
        )
        unschedulable = states["KubePyschedUnschedulablePods"]["alerts"]
        # `huge` is rejected by NodeResourcesFit on its node and by NodeAffinity elsewhere.
        assert "NodeResourcesFit" in {a["labels"].get("plugin") for a in unschedulable}, (
            unschedulable
        )
        assert {a["labels"].get("profile") for a in unschedulable} == {scheduler_name}
        errors = states["KubePyschedSchedulingErrors"]["alerts"]
        assert {a["labels"].get("profile") for a in errors} == {scheduler_name}, errors
        for name in ("KubePyschedDown", "KubePyschedNoLeader"):
            assert states[name]["state"] == "inactive", states[name]
    except BaseException:
        print(f"----- prometheus log tail ({workdir}) -----\n{prom.tail(60)}")
        raise
    finally:
        prom.stop()
