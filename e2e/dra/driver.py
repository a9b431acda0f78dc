"""A test DRA driver standing in for a vendor's GPU and NIC drivers (run as a process of its own).

    python -m e2e.dra.driver --kubeconfig K --config driver.json \
        [--label dra.e2e.kube-pysched.io/profile]

It publishes ResourceSlices for the nodes that carry `--label` (kwok nodes have no kubelet, so
no kubelet plugin runs: this process publishes what the two drivers' plugins would), the
label's value naming the profile of devices the node has (e2e/dra/inventory.py describes the
configuration: GPUs with model, memory capacity, PCIe root, NUMA node and driver version;
partitionable GPUs whose partitions consume shared counters; NICs of a second driver on the
same PCIe roots). Each slice is owned by its Node (deleted with it) and labelled
`dra.e2e.kube-pysched.io/driver-instance=<pid>`; every slice of this instance is deleted when it
stops.

Control interface: SIGHUP re-reads the configuration file and republishes what changed (a
changed pool gets the next generation), so a test taints a device or changes binding outcomes
by rewriting the file and sending SIGHUP. A configuration that cannot be used is logged and the
previous one kept. With binding outcomes configured, it watches ResourceClaims and, for a claim
allocated one of those devices, sets the device's binding (or binding failure) conditions in
`status.devices`, as a driver attaching a device would; a new configuration is applied to the
claims already allocated too (an outcome turned from `pending` to `ready` reaches them).

SIGTERM (or SIGINT) deletes its slices and ends it with exit status 0. Every action is logged
on stdout: `started:` once listening, `published <slice> (generation N)`, `deleted <slice>`,
`reported <conditions> on claim <ns/name>`.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch

from e2e.dra.inventory import (
    JSON,
    Config,
    ConfigError,
    Node,
    device_statuses,
    node_slices,
    parse_config,
)

PROFILE_LABEL = "dra.e2e.kube-pysched.io/profile"
INSTANCE_LABEL = "dra.e2e.kube-pysched.io/driver-instance"
GROUP, VERSION = "resource.k8s.io", "v1"


class Stop(Exception):
    """Raised by the SIGTERM/SIGINT handler to leave the main loop."""


def log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"{stamp} dra-driver: {message}", flush=True)


def load_config(path: Path) -> Config:
    """Reads and validates the configuration file (ConfigError names what is wrong)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    return parse_config(data)


def _spec_without_generation(body: JSON) -> JSON:
    spec = json.loads(json.dumps(body["spec"]))
    spec["pool"].pop("generation", None)
    return spec


class Driver:
    """Keeps the published slices equal to what the configuration gives the labelled nodes."""

    def __init__(self, api_client: k8s.ApiClient, config: Config, label: str) -> None:
        self.core = k8s.CoreV1Api(api_client)
        self.objects = k8s.CustomObjectsApi(api_client)
        self.config = config
        self.label = label
        self.instance = str(os.getpid())
        self.nodes: dict[str, Node] = {}
        self.lock = threading.Lock()
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.published: dict[str, JSON] = {}  # slice name -> spec (without generation)
        self.generations: dict[tuple[str, str], int] = {}  # (node, driver) -> generation
        self.claims: dict[str, JSON] = {}  # "<ns>/<name>" -> the claim as last seen

    # --- slices --------------------------------------------------------------------------

    def _desired(self) -> dict[str, JSON]:
        with self.lock:
            nodes = list(self.nodes.values())
        desired: dict[str, JSON] = {}
        for node in nodes:
            try:
                slices = node_slices(self.config, node, {})
            except ConfigError as exc:
                log(f"not publishing for node {node.name}: {exc}")
                continue
            # A pool whose slices change gets the next generation, as a driver republishes.
            changed: set[str] = set()
            for body in slices:
                name = body["metadata"]["name"]
                if self.published.get(name) != _spec_without_generation(body):
                    changed.add(body["spec"]["driver"])
            gens: dict[str, int] = {}
            for driver in {b["spec"]["driver"] for b in slices}:
                key = (node.name, driver)
                current = self.generations.get(key, 0)
                gens[driver] = current + 1 if driver in changed or not current else current
                self.generations[key] = gens[driver]
            for body in node_slices(self.config, node, gens):
                body["metadata"].setdefault("labels", {})[INSTANCE_LABEL] = self.instance
                desired[body["metadata"]["name"]] = body
        return desired

    def reconcile(self) -> None:
        """Creates, replaces and deletes this instance's slices to match the nodes."""
        desired = self._desired()
        found = self.objects.list_cluster_custom_object(
            GROUP, VERSION, "resourceslices", label_selector=f"{INSTANCE_LABEL}={self.instance}"
        )
        existing = {s["metadata"]["name"]: s for s in found["items"]}
        for name, body in desired.items():
            spec = _spec_without_generation(body)
            old = existing.get(name)
            if old is not None and self.published.get(name) == spec:
                continue
            generation = body["spec"]["pool"]["generation"]
            try:
                if old is None:
                    self.objects.create_cluster_custom_object(
                        GROUP, VERSION, "resourceslices", body
                    )
                else:
                    body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
                    self.objects.replace_cluster_custom_object(
                        GROUP, VERSION, "resourceslices", name, body
                    )
            except k8s.ApiException as exc:
                # Not retried: the next node event or SIGHUP publishes again.
                log(f"publishing {name} failed: {exc.status} {exc.reason} {exc.body}")
                continue
            self.published[name] = spec
            log(f"published {name} (generation {generation})")
        for name in set(existing) - set(desired):
            self._delete(name)

    def _delete(self, name: str) -> None:
        try:
            self.objects.delete_cluster_custom_object(GROUP, VERSION, "resourceslices", name)
            log(f"deleted {name}")
        except k8s.ApiException as exc:
            if exc.status != 404:
                log(f"deleting {name} failed: {exc.status} {exc.reason}")
        self.published.pop(name, None)

    def cleanup(self) -> None:
        """Deletes every slice of this instance."""
        found = self.objects.list_cluster_custom_object(
            GROUP, VERSION, "resourceslices", label_selector=f"{INSTANCE_LABEL}={self.instance}"
        )
        for s in found["items"]:
            self._delete(s["metadata"]["name"])

    # --- claims (binding conditions) ------------------------------------------------------

    def claim_seen(self, claim: JSON) -> None:
        """A claim from the watch: kept (a new configuration may change its outcome) and
        reported on."""
        meta = claim["metadata"]
        self.claims[f"{meta['namespace']}/{meta['name']}"] = claim
        self.report(claim)

    def claim_deleted(self, claim: JSON) -> None:
        meta = claim["metadata"]
        self.claims.pop(f"{meta['namespace']}/{meta['name']}", None)

    def report_all(self) -> None:
        """After a configuration change: every known claim is reported on again, so an outcome
        turned from `pending` to `ready` or `failed` reaches claims allocated before."""
        for claim in list(self.claims.values()):
            self.report(claim)

    def report(self, claim: JSON) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        statuses = device_statuses(self.config, claim, now)
        if statuses is None:
            return
        meta = claim["metadata"]
        body = {
            "metadata": {"resourceVersion": meta["resourceVersion"]},
            "status": {"devices": statuses},
        }
        try:
            self.objects.patch_namespaced_custom_object_status(
                GROUP, VERSION, meta["namespace"], "resourceclaims", meta["name"], body
            )
        except k8s.ApiException as exc:
            log(f"reporting on claim {meta['namespace']}/{meta['name']} failed: {exc.status}")
            return  # a conflict: the claim's next event brings the newer version
        kinds = sorted({c["type"] for s in statuses for c in s.get("conditions", [])})
        log(f"reported {', '.join(kinds)} on claim {meta['namespace']}/{meta['name']}")

    # --- watches ---------------------------------------------------------------------------

    def _node(self, obj: k8s.V1Node) -> Node:
        return Node(obj.metadata.name, obj.metadata.uid, obj.metadata.labels[self.label])

    def watch_nodes(self) -> None:
        while True:
            listed = self.core.list_node(label_selector=self.label)
            with self.lock:
                self.nodes = {n.metadata.name: self._node(n) for n in listed.items}
            self.events.put(("nodes", None))
            stream = watch.Watch().stream(
                self.core.list_node,
                label_selector=self.label,
                resource_version=listed.metadata.resource_version,
                timeout_seconds=300,
            )
            try:
                for event in stream:
                    obj = event["object"]
                    with self.lock:
                        if event["type"] == "DELETED":
                            self.nodes.pop(obj.metadata.name, None)
                        else:
                            self.nodes[obj.metadata.name] = self._node(obj)
                    self.events.put(("nodes", None))
            except k8s.ApiException as exc:
                if exc.status != 410:
                    raise

    def watch_claims(self) -> None:
        while True:
            listed = self.objects.list_cluster_custom_object(GROUP, VERSION, "resourceclaims")
            for claim in listed["items"]:
                self.events.put(("claim", claim))
            stream = watch.Watch().stream(
                self.objects.list_cluster_custom_object,
                GROUP,
                VERSION,
                "resourceclaims",
                resource_version=listed["metadata"]["resourceVersion"],
                timeout_seconds=300,
            )
            try:
                for event in stream:
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self.events.put(("claim", event["object"]))
                    elif event["type"] == "DELETED":
                        self.events.put(("claim-deleted", event["object"]))
            except k8s.ApiException as exc:
                if exc.status != 410:
                    raise


def _start(target: Any, errors: queue.Queue[tuple[str, Any]]) -> None:
    def run() -> None:
        try:
            target()
        except Exception as exc:  # a broken watch ends the driver: reported, not swallowed
            errors.put(("error", f"{target.__name__}: {exc!r}"))

    threading.Thread(target=run, name=target.__name__, daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--config", required=True, type=Path, help="the JSON configuration")
    parser.add_argument("--label", default=PROFILE_LABEL, help="node label naming the profile")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"dra-driver: {exc}", file=sys.stderr)
        return 2
    reload = threading.Event()

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, lambda _s, _f: reload.set())
    api_client = k8s_config.new_client_from_config(config_file=str(args.kubeconfig))
    driver = Driver(api_client, config, args.label)
    code = 0
    try:
        _start(driver.watch_nodes, driver.events)
        _start(driver.watch_claims, driver.events)
        log(f"started: instance {driver.instance}, nodes labelled {args.label}")
        while True:
            if reload.is_set():
                reload.clear()
                try:
                    driver.config = load_config(args.config)
                    log("configuration re-read")
                    driver.reconcile()
                    driver.report_all()
                except ConfigError as exc:
                    log(f"configuration refused, keeping the previous one: {exc}")
            try:
                kind, payload = driver.events.get(timeout=0.5)
            except queue.Empty:
                continue
            if kind == "error":
                log(f"stopping: {payload}")
                code = 1
                break
            if kind == "claim":
                driver.claim_seen(payload)
            elif kind == "claim-deleted":
                driver.claim_deleted(payload)
            else:
                driver.reconcile()
    except Stop as exc:
        log(f"{exc}: stopping")
    finally:
        driver.cleanup()
        api_client.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
