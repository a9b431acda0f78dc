"""DRA in the simulator: claims made from ResourceClaimTemplates as kube-controller-manager
makes them, devices allocated by DynamicResources and shown per pod, and upstream's reason
for a claim no device satisfies."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.logging import reset_logging
from scheduler.simulate.claims import generate_name
from scheduler.simulate.cli import simulate_main
from tests.simulate.test_simulate import node, pod, run, write

DRIVER = "gpu.example.com"


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    yield
    reset_logging()


def device_class(name: str, driver: str) -> dict[str, Any]:
    selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [selector]},
    }


def node_slice(node_name: str, driver: str, devices: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": d} for d in devices],
        },
    }


def template(name: str, device_class_name: str) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class_name}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "metadata": {"labels": {"team": "ml"}},
            "spec": {"devices": {"requests": [request]}},
        },
    }


def claiming(name: str, template_name: str) -> dict[str, Any]:
    raw = pod(name, "100m")
    raw["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template_name}]
    return raw


def cluster(tmp_path: Path) -> str:
    return write(
        tmp_path / "c.yaml",
        node("a"),
        device_class(DRIVER, DRIVER),
        device_class("other.example.com", "other.example.com"),
        node_slice("a", DRIVER, ["gpu-0"]),
        template("one-gpu", DRIVER),
        template("other", "other.example.com"),
        claiming("trainer", "one-gpu"),
        claiming("stuck", "other"),
    )


def test_a_template_claim_gets_a_device_and_an_unsatisfiable_one_stays_pending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = run(capsys, "--snapshot", cluster(tmp_path))["configs"][0]
    assert cfg["placed"] == {"default/trainer": "a"}
    [device] = cfg["devices"]["default/trainer"]
    assert re.fullmatch(r"trainer-gpu-[bcdfghjklmnpqrstvwxz2456789]{5}", device["claim"])
    assert device | {"claim": ""} == {
        "claim": "",
        "request": "gpu",
        "driver": DRIVER,
        "pool": "a",
        "device": "gpu-0",
    }
    [stuck] = cfg["pending"]
    assert stuck["pod"] == "default/stuck"
    assert stuck["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    assert stuck["reasons"] == {"cannot allocate all claims": 1}


def test_the_same_seed_names_the_claims_alike_and_the_table_shows_the_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cluster(tmp_path)
    first = run(capsys, "--snapshot", path)["configs"][0]["devices"]
    assert run(capsys, "--snapshot", path)["configs"][0]["devices"] == first
    assert simulate_main(["--snapshot", path]) == 0
    claim = first["default/trainer"][0]["claim"]
    assert f"default/trainer  {claim}  gpu      {DRIVER}/a/gpu-0" in capsys.readouterr().out


def test_generated_names_are_shortened_as_the_controller_shortens_them() -> None:
    assert generate_name("web", "gpu") == "web-gpu-"
    # 72 characters with the hyphens: each name kept in proportion, 50 * 57 // 72 and
    # 20 * 57 // 72, and no trailing hyphen (upstream's).
    assert generate_name("p" * 50, "c" * 20) == "p" * 39 + "-" + "c" * 15


def test_a_pod_of_a_missing_template_is_held_with_the_plugins_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "c.yaml", node("a"), claiming("orphan", "no-such-template"))
    cfg = run(capsys, "--snapshot", path)["configs"][0]
    assert cfg["pending"] == [
        {
            "pod": "default/orphan",
            "message": 'pod "default/orphan": ResourceClaim not created yet',
            "reasons": {},
        }
    ]
