"""/flagz and /statusz: text by default, structured by kind and version, 406 otherwise."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from scheduler import __version__
from scheduler.cmd import zpages
from scheduler.cmd.cli import build_parser

JSON_FLAGZ = "application/json;as=Flagz;v=v1beta1;g=config.k8s.io"
HEADER_LINES = [
    "",
    "kube-scheduler flagz",
    "Warning: This endpoint is not meant to be machine parseable, has no formatting "
    "compatibility guarantees and is for debugging purposes only.",
]


def test_flag_values_lists_every_long_flag_with_its_value_in_effect() -> None:
    parser = build_parser()
    args = parser.parse_args(["--v", "3", "--leader-elect=false", "--secure-port", "0"])
    flags = zpages.flag_values(parser, args)
    assert flags["v"] == "3"
    assert flags["leader-elect"] == "false"
    assert flags["secure-port"] == "0"
    assert flags["authorization-always-allow-paths"] == "/healthz,/readyz,/livez"
    assert flags["config"] == ""  # a default is listed too, as pflag's VisitAll does
    assert "help" not in flags and "version" not in flags


@pytest.mark.parametrize("accept", ["", "text/plain", "*/*", "text/*", "application/xml, */*"])
def test_flagz_text_has_the_header_then_sorted_flags(accept: str) -> None:
    page = zpages.flagz({"v": "2", "bind-address": "0.0.0.0"}, accept)
    assert page.code == 200 and page.content_type == "text/plain; charset=utf-8"
    lines = page.body.decode().split("\n")
    assert lines[:3] == HEADER_LINES
    match = re.fullmatch(r"bind-address(:|: |=| )0\.0\.0\.0", lines[3])
    assert match is not None
    assert lines[4] == f"v{match.group(1)}2" and lines[5:] == [""]


def test_flagz_json_and_yaml_are_the_v1beta1_object() -> None:
    expected = {
        "kind": "Flagz",
        "apiVersion": "config.k8s.io/v1beta1",
        "metadata": {"name": "kube-scheduler"},
        "flags": {"v": "2"},
    }
    page = zpages.flagz({"v": "2"}, JSON_FLAGZ)
    assert (page.code, page.content_type) == (200, "application/json")
    assert json.loads(page.body) == expected and "Warning" not in page.headers
    page = zpages.flagz({"v": "2"}, "application/yaml;as=Flagz;v=v1beta1;g=config.k8s.io")
    assert page.content_type == "application/yaml" and yaml.safe_load(page.body) == expected


def test_v1alpha1_is_answered_with_a_deprecation_warning() -> None:
    page = zpages.flagz({}, "application/json;as=Flagz;v=v1alpha1;g=config.k8s.io")
    assert json.loads(page.body)["apiVersion"] == "config.k8s.io/v1alpha1"
    assert "deprecated" in page.headers["Warning"]


@pytest.mark.parametrize(
    "accept",
    [
        "application/xml",
        "application/json",
        "application/json;v=v1beta1;g=config.k8s.io",
        "application/json;as=Statusz;v=v1beta1;g=config.k8s.io",
        "application/json;as=Flagz;v=v9;g=config.k8s.io",
        "text/plain;q=0",
    ],
)
def test_anything_else_is_406_with_a_status(accept: str) -> None:
    page = zpages.flagz({}, accept)
    assert page.code == 406
    status = json.loads(page.body)
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "NotAcceptable", 406)


def test_statusz_text_and_json() -> None:
    paths = ["/healthz", "/debug/pprof/profile", "/configz", "/"]
    page = zpages.statusz(1_000_000.0, paths, "", now=1_000_000.0 + 3723)
    text = page.body.decode()
    assert text.startswith("\nkube-scheduler statusz\nWarning: ")
    assert re.search(r"\nUp(:|: |=| ) 1 hr 02 min 03 sec\n", text)
    assert re.search(rf"\nBinary version(:|: |=| ) {re.escape(__version__)}\n", text)
    assert re.search(r"\nPaths(:|: |=| ) /configz /debug /healthz\n", text)
    accept = "application/json;as=Statusz;v=v1beta1;g=config.k8s.io"
    data = json.loads(zpages.statusz(1_000_000.0, paths, accept, now=1_000_010.0).body)
    assert data["kind"] == "Statusz" and data["metadata"] == {"name": "kube-scheduler"}
    assert data["startTime"] == "1970-01-12T13:46:40Z" and data["uptimeSeconds"] == 10
    assert data["binaryVersion"] == __version__
    assert data["paths"] == ["/configz", "/debug", "/healthz"]
