"""A test provisioner standing in for an external CSI provisioner (run as a process of its own).

    python -m e2e.provisioner --kubeconfig K --name e2e.kube-pysched.io/provisioner \
        [--silent-name e2e.kube-pysched.io/silent] [--source csi|local]

It lists and watches PersistentVolumeClaims in all namespaces. kube-controller-manager's PV
controller hands a claim of a StorageClass whose provisioner is not in-tree to the external
provisioner by annotating it `volume.kubernetes.io/storage-provisioner: <class provisioner>`
(and the beta key) and leaves the provisioning to it (pv_controller.go,
provisionClaimOperationExternal; for a WaitForFirstConsumer class only once the scheduler has set
`volume.kubernetes.io/selected-node`). For each such claim naming `--name`, with a selected node
and no volumeName, this creates what an external provisioner would: a PV `pvc-<claim uid>` of the
requested capacity, the claim's access modes, volume mode and class, `claimRef` to the claim
(namespace, name, uid), `nodeAffinity.required` pinning `kubernetes.io/hostname` to the selected
node, a `csi` (driver = the provisioner name) or `local` source and the annotation
`pv.kubernetes.io/provisioned-by`. The PV controller then binds claim and volume.

Claims naming `--silent-name` are only logged: a provisioner that never answers. SIGTERM (or
SIGINT) ends it cleanly with exit status 0. Every decision is logged on stdout.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from types import FrameType
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch

STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
HOSTNAME = "kubernetes.io/hostname"

DEFAULT_NAME = "e2e.kube-pysched.io/provisioner"
DEFAULT_SILENT_NAME = "e2e.kube-pysched.io/silent"


class Stop(Exception):
    """Raised by the SIGTERM/SIGINT handler to leave a blocking watch read."""


def log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"{stamp} provisioner: {message}", flush=True)


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def volume_for(claim: k8s.V1PersistentVolumeClaim, name: str, source: str) -> dict[str, Any]:
    """The PV an external provisioner creates for `claim` on its selected node."""
    meta = claim.metadata
    node = meta.annotations[SELECTED_NODE]
    pv_name = f"pvc-{meta.uid}"
    spec: dict[str, Any] = {
        "capacity": {"storage": claim.spec.resources.requests["storage"]},
        "accessModes": list(claim.spec.access_modes or ["ReadWriteOnce"]),
        "storageClassName": claim.spec.storage_class_name,
        "persistentVolumeReclaimPolicy": "Delete",
        "volumeMode": claim.spec.volume_mode or "Filesystem",
        "claimRef": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": meta.namespace,
            "name": meta.name,
            "uid": meta.uid,
        },
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
                ]
            }
        },
    }
    if source == "local":
        spec["local"] = {"path": f"/mnt/e2e/{pv_name}"}
    else:
        # A CSI driver name is a DNS subdomain: the provisioner name without its slash.
        spec["csi"] = {"driver": name.replace("/", "."), "volumeHandle": pv_name}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name, "annotations": {PROVISIONED_BY: name}},
        "spec": spec,
    }


class Provisioner:
    def __init__(self, core: k8s.CoreV1Api, name: str, silent_name: str, source: str) -> None:
        self.core = core
        self.name = name
        self.silent_name = silent_name
        self.source = source
        self.done: set[str] = set()  # claim uids answered (or ignored), to log each once

    def handle(self, claim: k8s.V1PersistentVolumeClaim) -> None:
        meta = claim.metadata
        annotations = meta.annotations or {}
        provisioner = annotations.get(STORAGE_PROVISIONER) or annotations.get(
            BETA_STORAGE_PROVISIONER
        )
        if provisioner not in (self.name, self.silent_name) or claim.spec.volume_name:
            return
        node = annotations.get(SELECTED_NODE)
        if not node or meta.deletion_timestamp is not None or meta.uid in self.done:
            return
        key = f"{meta.namespace}/{meta.name}"
        if provisioner == self.silent_name:
            self.done.add(meta.uid)
            log(f"claim {key} on node {node}: silent provisioner {provisioner}, not answering")
            return
        body = volume_for(claim, self.name, self.source)
        try:
            self.core.create_persistent_volume(body)
            log(f"claim {key}: created PV {body['metadata']['name']} on node {node}")
        except k8s.ApiException as exc:
            if exc.status != 409:
                log(f"claim {key}: creating PV failed: {exc.status} {exc.reason} {exc.body}")
                return  # retried on the claim's next event or the next relist
            log(f"claim {key}: PV {body['metadata']['name']} exists already")
        self.done.add(meta.uid)

    def run(self) -> None:
        """List, then watch from the list's resourceVersion; relist when the watch expires."""
        while True:
            listed = self.core.list_persistent_volume_claim_for_all_namespaces()
            for claim in listed.items:
                self.handle(claim)
            stream = watch.Watch().stream(
                self.core.list_persistent_volume_claim_for_all_namespaces,
                resource_version=listed.metadata.resource_version,
                timeout_seconds=300,
            )
            try:
                for event in stream:
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self.handle(event["object"])
            except k8s.ApiException as exc:
                if exc.status != 410:  # 410 Gone: resourceVersion too old, relist
                    raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--name", default=DEFAULT_NAME, help="the provisioner name it answers")
    parser.add_argument(
        "--silent-name", default=DEFAULT_SILENT_NAME, help="a provisioner name it never answers"
    )
    parser.add_argument("--source", choices=("csi", "local"), default="csi")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    api_client = k8s_config.new_client_from_config(config_file=args.kubeconfig)
    provisioner = Provisioner(k8s.CoreV1Api(api_client), args.name, args.silent_name, args.source)
    log(f"started: answering {args.name!r} ({args.source}), silent for {args.silent_name!r}")
    try:
        provisioner.run()
    except Stop as stop:
        log(f"{stop}: stopping")
    finally:
        api_client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
