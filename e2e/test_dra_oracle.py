"""The DRA oracle (upstream's structured allocator) and the random case generator it is fed.

Hand-written cases check that the oracle answers as upstream's rules say (so the differential
test compares against the real thing, not a broken harness); the generator is checked for
determinism, for a healthy mix of answers and, on the control plane, for producing only
objects the API server accepts.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from e2e.dra.cases import ADMIN_NAMESPACE, ALL_FEATURES, generate_case, generate_cases
from e2e.dra.oracle import Oracle, answer_kind, answers_of

pytestmark = pytest.mark.dra_oracle

JSON = dict[str, Any]
NODE: JSON = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}
GPU_CLASS: JSON = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}
ON_NODE_A = {
    "nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}
    ]
}


def _gpu(name: str, model: str) -> JSON:
    return {
        "name": name,
        "attributes": {"model": {"string": model}},
        "capacity": {"memory": {"value": "40Gi"}},
    }


TWO_GPUS: JSON = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-a-gpus"},
    "spec": {
        "driver": "gpu.example.com",
        "nodeName": "node-a",
        "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
        "devices": [_gpu("gpu-0", "a100"), _gpu("gpu-1", "h100")],
    },
}


def _case(used: tuple[str, ...] = (), **request: Any) -> JSON:
    exactly = {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claim", "namespace": "default", "uid": "claim-uid"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly | request}]}},
    }
    return {
        "node": NODE,
        "classes": [GPU_CLASS],
        "slices": [TWO_GPUS],
        "claims": [claim],
        "allocatedDevices": list(used),
        "features": dict.fromkeys(ALL_FEATURES, True),
    }


def _one_device(device: str) -> JSON:
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": device}
    return {"allocations": [{"devices": {"results": [result]}, "nodeSelector": ON_NODE_A}]}


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    with Oracle() as running:
        yield running


def test_one_gpu_from_a_two_gpu_slice_is_the_first(oracle: Oracle) -> None:
    # Upstream walks a pool's devices in slice order; a nodeName slice pins the node.
    assert oracle.allocate(_case()) == _one_device("gpu-0")


def test_a_device_in_use_is_skipped(oracle: Oracle) -> None:
    assert oracle.allocate(_case(("gpu.example.com/node-a/gpu-0",))) == _one_device("gpu-1")


def test_more_devices_than_the_node_has_is_unsatisfiable(oracle: Oracle) -> None:
    assert oracle.allocate(_case(count=3)) == {"allocations": None}


def test_a_cel_selector_picks_the_matching_device(oracle: Oracle) -> None:
    h100 = 'device.attributes["gpu.example.com"].model == "h100"'
    answer = oracle.allocate(_case(selectors=[{"cel": {"expression": h100}}]))
    assert answer == _one_device("gpu-1")


def test_an_invalid_cel_expression_is_an_error_naming_the_claim(oracle: Oracle) -> None:
    broken = 'device.attributes["gpu.example.com"].model =='
    answer = oracle.allocate(_case(selectors=[{"cel": {"expression": broken}}]))
    assert answer_kind(answer) == "error"
    assert "claim default/claim: selector #0: CEL compile error" in answer["error"]


def test_a_malformed_case_is_an_error_and_the_oracle_goes_on(oracle: Oracle) -> None:
    assert "unknown field" in oracle.allocate({**_case(), "node_name": "typo"})["error"]
    bad_id = oracle.allocate(_case(("gpu-0",)))
    assert bad_id == {"error": 'allocatedDevices: "gpu-0" is not driver/pool/device'}
    assert oracle.allocate(_case()) == _one_device("gpu-0")


def _two_pools() -> JSON:
    """A case with two pools of a GPU each; the second slice's pool sorts first by name."""
    second = json.loads(json.dumps(TWO_GPUS))
    second["metadata"]["name"] = "shared-gpus"
    second["spec"]["pool"]["name"] = "a-shared-pool"
    second["spec"]["devices"] = [_gpu("gpu-9", "a100")]
    return _case() | {"slices": [TWO_GPUS, second]}


def _picked(answers: list[JSON]) -> list[str]:
    return sorted(a["allocations"][0]["devices"]["results"][0]["device"] for a in answers)


def test_with_v1_37_gates_upstream_searches_pools_by_name() -> None:
    """The allocator v1.37's default gates select ("incubating") sorts pools by driver and
    pool name: the GPU of the pool listed second is picked, every time."""
    with Oracle(runs=50) as oracle:
        assert _picked(answers_of(oracle.allocate(_two_pools()))) == ["gpu-9"]


def test_with_consumable_capacity_and_binding_conditions_off_the_pool_order_is_random() -> None:
    """Then upstream uses its "stable" allocator, whose GatherPools collects pools in a Go map:
    the order is a random rotation per call, and over 200 allocations each GPU is picked (a
    miss has a chance of about 1e-12)."""
    case = _two_pools()
    case["features"] |= {"consumableCapacity": False, "bindingConditions": False}
    with Oracle(runs=200) as oracle:
        assert _picked(answers_of(oracle.allocate(case))) == ["gpu-0", "gpu-9"]


def test_the_generator_is_deterministic_per_seed_and_index() -> None:
    assert list(generate_cases(7, 3))[2] == generate_case(7, 2)
    assert generate_case(7, 2) != generate_case(8, 2)


def test_generated_cases_give_a_healthy_mix_of_answers(oracle: Oracle) -> None:
    """Every kind of answer is well represented, so the differential test compares each."""
    answers = oracle.allocate_all(generate_cases(1, 500))
    kinds = collections.Counter(answer_kind(a) for a in answers)
    assert all(kinds[kind] >= 50 for kind in ("satisfiable", "unsatisfiable", "error")), kinds
    results = [
        r
        for a in answers
        for alloc in a.get("allocations") or []
        for r in alloc["devices"]["results"]
    ]
    for feature in ("adminAccess", "tolerations", "bindingConditions", "shareID"):
        assert any(r.get(feature) for r in results), f"no allocation exercises {feature}"
    assert any("/" in r["request"] for r in results), "no firstAvailable subrequest allocated"


# --- the API server accepts what the generator produces ---------------------------------------


def _dry_run(call: Any, *args: Any) -> str | None:
    try:
        call(*args, dry_run="All", field_validation="Strict", _preload_content=False)
    except ApiException as exc:
        return f"{exc.status}: {exc.body}"
    return None


@pytest.fixture
def admin_namespace(core_v1: k8s.CoreV1Api) -> Iterator[str]:
    """The namespace generated admin-access claims live in, labelled as upstream requires
    (created and deleted again, unless the cluster already has it)."""
    labels = {"resource.kubernetes.io/admin-access": "true"}
    body = k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=ADMIN_NAMESPACE, labels=labels))
    try:
        core_v1.create_namespace(body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        yield ADMIN_NAMESPACE  # a cluster's own: left as it is
        return
    try:
        yield ADMIN_NAMESPACE
    finally:
        core_v1.delete_namespace(ADMIN_NAMESPACE)


def test_generated_objects_are_accepted_by_the_api_server(
    api_client: k8s.ApiClient, core_v1: k8s.CoreV1Api, admin_namespace: str
) -> None:
    """Server-side dry runs (strict field validation) of every object of 100 cases."""
    resource = k8s.ResourceV1Api(api_client)
    refused: list[str] = []
    for index, case in enumerate(generate_cases(1, 100)):
        attempts: list[tuple[Callable[..., Any], JSON]] = [(core_v1.create_node, case["node"])]
        attempts += [(resource.create_device_class, c) for c in case["classes"]]
        attempts += [(resource.create_resource_slice, s) for s in case["slices"]]
        for create, body in attempts:
            if (why := _dry_run(create, body)) is not None:
                refused.append(f"case {index} {body['metadata']['name']}: {why}")
        for claim in case["claims"]:
            namespace = claim["metadata"]["namespace"]
            body = json.loads(json.dumps(claim))
            del body["metadata"]["uid"]  # set by the server; a client may not choose it
            why = _dry_run(resource.create_namespaced_resource_claim, namespace, body)
            if why is not None:
                refused.append(f"case {index} claim {claim['metadata']['name']}: {why}")
    assert not refused, "\n".join(refused[:10])
