"""kwok's configuration and command line: which nodes it manages and how pods behave.

The stages live in ``kwok-stages.yaml`` next to this module (reviewed, not generated); this
module adds the KwokConfiguration options and writes both into one config file per run.
"""

from __future__ import annotations

from pathlib import Path

import yaml

#: kwok manages only nodes carrying this annotation (see nodes.create_kwok_node).
NODE_ANNOTATION_KEY = "kwok.x-k8s.io/node"
NODE_ANNOTATION_VALUE = "fake"
NODE_SELECTOR = f"{NODE_ANNOTATION_KEY}={NODE_ANNOTATION_VALUE}"

#: Pod IPs kwok hands out; disjoint from the service range (certs.SERVICE_CLUSTER_IP_RANGE).
POD_CIDR = "10.244.0.0/16"

#: Node Lease duration kwok reports; it renews every quarter of it. The node lifecycle
#: controller only looks at Lease renewals, so nodes stay Ready however busy kwok is with pods.
NODE_LEASE_DURATION_SECONDS = 40

STAGES_FILE = Path(__file__).with_name("kwok-stages.yaml")

#: kwok leaves pods carrying this label alone (KwokConfiguration
#: disregardStatusWithLabelSelector): no stage is played for them, so a bound pod stays exactly
#: as the scheduler left it (Pending, spec.nodeName set, no status patch, no pod IP). The
#: bench's capacity mode labels its pods so: only the binding counts there. (kwok marks the
#: option deprecated in favour of Stage selectors, but it is checked before any stage is
#: matched, so it is the cheapest way to make kwok skip a pod.)
DISREGARD_LABEL_KEY = "kwok.e2e.kube-pysched/status"
DISREGARD_LABEL_VALUE = "disregard"


def stage_names() -> list[str]:
    """Names of the shipped stages (used by tests and docs)."""
    docs = yaml.safe_load_all(STAGES_FILE.read_text())
    return [d["metadata"]["name"] for d in docs if d]


#: jq for kwok's ``durationFrom``: how long a deleted pod's preStop sleep hooks hold it (the
#: longest ``lifecycle.preStop.sleep.seconds``, at most the grace period), as e.g. "79s".
PRESTOP_DELAY_JQ = (
    "[([.spec.containers[]? | .lifecycle.preStop.sleep.seconds // 0] + [0] | max), "
    '(.metadata.deletionGracePeriodSeconds // 0)] | min | "\\(.)s"'
)


def stages_text(*, prompt_pod_deletion: bool = False) -> str:
    """The shipped Stages; ``prompt_pod_deletion`` changes when ``pod-delete`` acts.

    By default a terminating pod stays until its grace period is over, like a container that
    ignores SIGTERM (what the preemption tests need). Prompt deletion is a container that
    exits on SIGTERM at once, as the pause and agnhost images of Kubernetes' e2e specs do: the
    pod is removed when its preStop sleep hooks are done (at once if it has none).
    """
    text = STAGES_FILE.read_text()
    if not prompt_pod_deletion:
        return text
    docs = [d for d in yaml.safe_load_all(text) if d]
    for doc in docs:
        if doc["metadata"]["name"] == "pod-delete":
            doc["spec"]["delay"] = {
                "durationMilliseconds": 0,
                "durationFrom": {"jq": {"expression": PRESTOP_DELAY_JQ}},
            }
    return "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)


def write_config(
    path: Path,
    *,
    prompt_pod_deletion: bool = False,
    node_lease_duration_seconds: int = NODE_LEASE_DURATION_SECONDS,
) -> Path:
    """Write a kwok config: KwokConfiguration options followed by the shipped Stages."""
    options = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        # kwok v0.8.0 does not default a KwokConfiguration read from a file, so every option
        # that its defaulter would set is spelled out (values as in kwok's defaults unless noted).
        "options": {
            "manageAllNodes": False,
            "manageNodesWithAnnotationSelector": NODE_SELECTOR,
            "disregardStatusWithLabelSelector": f"{DISREGARD_LABEL_KEY}={DISREGARD_LABEL_VALUE}",
            "cidr": POD_CIDR,
            "nodeLeaseDurationSeconds": node_lease_duration_seconds,
            "nodeLeaseParallelism": 4,
            "nodePlayStageParallelism": 4,
            # More workers than the default 4 so thousands of pods turn Running promptly.
            "podPlayStageParallelism": 16,
            "podsOnNodeSyncParallelism": 1,
            "enablePodsOnNodeSyncListPager": True,
            "enablePodsOnNodeSyncStreamWatch": False,
            "enableDebuggingHandlers": True,
            "enableProfilingHandler": True,
            "enableContentionProfiling": False,
        },
    }
    stages = stages_text(prompt_pod_deletion=prompt_pod_deletion)
    path.write_text(yaml.safe_dump(options, sort_keys=False) + "---\n" + stages)
    return path


def command(
    binary: Path,
    kubeconfig: Path,
    config: Path,
    server_port: int,
    node_lease_duration_seconds: int = NODE_LEASE_DURATION_SECONDS,
) -> list[str]:
    """kwok's argv; the selector and lease flags repeat the config so `ps` shows them."""
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--config={config}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={NODE_SELECTOR}",
        f"--node-lease-duration-seconds={node_lease_duration_seconds}",
        f"--cidr={POD_CIDR}",
        f"--server-address=127.0.0.1:{server_port}",
    ]


def environment(workdir: Path, base: dict[str, str]) -> dict[str, str]:
    """kwok reads ~/.kwok/kwok.yaml if present; pointing KWOK_WORKDIR at the run keeps it out."""
    return dict(base, KWOK_WORKDIR=str(workdir))
