"""InterPodAffinityArgs: defaults, range and strict decoding, in kube-scheduler's wording."""

from __future__ import annotations

import pytest

from scheduler.framework.registry import ArgsError
from scheduler.plugins.inter_pod_affinity import SPEC
from scheduler.plugins.inter_pod_affinity.args import InterPodAffinityArgs, decode_args


def test_defaults() -> None:
    assert decode_args(None) == InterPodAffinityArgs(1, False)
    assert decode_args({}) == InterPodAffinityArgs(1, False)
    assert decode_args({"hardPodAffinityWeight": None}) == InterPodAffinityArgs(1, False)


def test_valid_values_including_the_bounds() -> None:
    assert decode_args({"hardPodAffinityWeight": 0}).hard_pod_affinity_weight == 0
    assert decode_args({"hardPodAffinityWeight": 100}).hard_pod_affinity_weight == 100
    args = decode_args({"ignorePreferredTermsOfExistingPods": True, "kind": "InterPodAffinityArgs"})
    assert args.ignore_preferred_terms_of_existing_pods


@pytest.mark.parametrize("weight", [-1, 101])
def test_weight_out_of_range(weight: int) -> None:
    with pytest.raises(ArgsError) as err:
        decode_args({"hardPodAffinityWeight": weight})
    assert str(err.value) == (
        f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0, 100]"
    )


def test_strict_decoding() -> None:
    with pytest.raises(ArgsError, match='unknown field "hardWeight"'):
        decode_args({"hardWeight": 1})
    with pytest.raises(ArgsError, match="must be an integer"):
        decode_args({"hardPodAffinityWeight": "1"})
    with pytest.raises(ArgsError, match="must be a boolean"):
        decode_args({"ignorePreferredTermsOfExistingPods": "yes"})


def test_the_spec_decodes_with_these_args() -> None:
    assert SPEC.decode_args is decode_args
