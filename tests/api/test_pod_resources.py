from scheduler.api.resources import DEFAULT_MEMORY_REQUEST
from scheduler.testing import make_pod


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
    from scheduler.testing import pod_json

    data = pod_json(cpu="100m")
    data["spec"]["resources"] = {"requests": {"cpu": "2"}}
    pod = parse_pod(data)
    assert pod.requests.milli_cpu == 2000
    assert pod.non0_cpu == 2000
    assert pod.non0_mem == DEFAULT_MEMORY_REQUEST


def test_overhead_and_extended_resources() -> None:
    from scheduler.api.parse import parse_pod
    from scheduler.testing import pod_json

    data = pod_json(requests={"cpu": "1", "example.com/gpu": "2"})
    data["spec"]["overhead"] = {"cpu": "250m"}
    pod = parse_pod(data)
    assert pod.requests.milli_cpu == 1250
    assert pod.requests.scalar == {"example.com/gpu": 2}


def test_resized_pod_counts_the_larger_of_spec_and_allocated() -> None:
    from scheduler.api.parse import parse_pod
    from scheduler.testing import pod_json

    data = pod_json(cpu="1")
    data["status"]["containerStatuses"] = [
        {"name": "c", "allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "2"}}}
    ]
    assert parse_pod(data).requests.milli_cpu == 3000


def test_plain_container_fast_path_equals_exact_general_path() -> None:
    """The integer fast path must agree with exact quantity sums for every simple shape."""
    import random

    from scheduler.api import pod_resources

    rng = random.Random(7)
    cpus = [None, "0", "1", "100m", "1.5", "250m", "2k", "0.5"]
    mems = [None, "0", "64Mi", "1Gi", "1G", "1.5Gi", "1000"]
    for _ in range(300):
        containers = []
        for i in range(rng.randint(0, 3)):
            requests = {}
            cpu, mem = rng.choice(cpus), rng.choice(mems)
            if cpu is not None:
                requests["cpu"] = cpu
            if mem is not None:
                requests["memory"] = mem
            if rng.random() < 0.2:
                requests["example.com/gpu"] = str(rng.randint(1, 4))
            containers.append({"name": f"c{i}", "resources": {"requests": requests}})
        pod = {"spec": {"containers": containers}}
        fast = pod_resources._simple_pod_resources(pod)
        assert fast is not None
        reqs = pod_resources._pod_requests(pod, None)
        non0 = pod_resources._pod_requests(pod, pod_resources._NON_MISSING_DEFAULTS)
        general = pod_resources._to_resource(reqs)
        assert (fast[0].milli_cpu, fast[0].memory, fast[0].scalar) == (
            general.milli_cpu,
            general.memory,
            general.scalar,
        )
        assert fast[1] == pod_resources._ceil(non0.get("cpu", 0) * 1000)
        assert fast[2] == pod_resources._ceil(non0.get("memory", 0))


def test_sub_milli_cpu_takes_the_exact_path() -> None:
    from scheduler.api import pod_resources

    pod = {
        "spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "0.0004"}}},
                {"name": "b", "resources": {"requests": {"cpu": "0.0004"}}},
            ]
        }
    }
    assert pod_resources._simple_pod_resources(pod) is None
    res, _, _ = pod_resources.compute_pod_resources(pod)
    assert res.milli_cpu == 1  # 0.8m summed exactly, rounded up once
