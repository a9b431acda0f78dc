from scheduler.api.resources import DEFAULT_MEMORY_REQUEST
from tests.builders import make_pod


def test_requests_sum_containers_and_take_max_with_init_containers() -> None:
    pod = make_pod(
        cpu="500m",
        memory="1Gi",
        extra_containers=[{"name": "b", "resources": {"requests": {"cpu": "250m"}}}],
        init_containers=[{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "10Mi"}}}],
    )
    assert pod.requests.milli_cpu == 2000
    assert pod.requests.memory == 2**30


def test_sidecars_add_to_regular_containers_and_to_later_init_containers() -> None:
    pod = make_pod(
        cpu="1",
        init_containers=[
            {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
            {"name": "i", "resources": {"requests": {"cpu": "1200m"}}},
        ],
    )
    # regular 1 + sidecar 0.5 = 1.5; init i runs beside the sidecar: 1.2 + 0.5 = 1.7 -> max 1.7
    assert pod.requests.milli_cpu == 1700


def test_non_zero_defaults_apply_per_container_missing_a_request() -> None:
    pod = make_pod(cpu="200m", extra_containers=[{"name": "b"}])
    assert pod.requests.milli_cpu == 200
    assert pod.requests.memory == 0
    assert pod.non0_cpu == 300  # 200m + 100m default for the container without a request
    assert pod.non0_mem == 2 * DEFAULT_MEMORY_REQUEST


def test_explicit_zero_request_is_not_replaced_by_default() -> None:
    pod = make_pod(cpu="0", memory="0")
    assert pod.non0_cpu == 0
    assert pod.non0_mem == 0


def test_pod_level_requests_override_container_sum() -> None:
    raw_pod = make_pod(cpu="100m")
    assert raw_pod.requests.milli_cpu == 100
    from scheduler.api.parse import parse_pod
    from tests.builders import pod_json

    data = pod_json(cpu="100m")
    data["spec"]["resources"] = {"requests": {"cpu": "2"}}
    pod = parse_pod(data)
    assert pod.requests.milli_cpu == 2000
    assert pod.non0_cpu == 2000
    assert pod.non0_mem == DEFAULT_MEMORY_REQUEST


def test_overhead_and_extended_resources() -> None:
    from scheduler.api.parse import parse_pod
    from tests.builders import pod_json

    data = pod_json(requests={"cpu": "1", "example.com/gpu": "2"})
    data["spec"]["overhead"] = {"cpu": "250m"}
    pod = parse_pod(data)
    assert pod.requests.milli_cpu == 1250
    assert pod.requests.scalar == {"example.com/gpu": 2}


def test_resized_pod_counts_the_larger_of_spec_and_allocated() -> None:
    from scheduler.api.parse import parse_pod
    from tests.builders import pod_json

    data = pod_json(cpu="1")
    data["status"]["containerStatuses"] = [
        {"name": "c", "allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "2"}}}
    ]
    assert parse_pod(data).requests.milli_cpu == 3000
