import pytest

from scheduler.api.labels import LabelSelector, NodeSelector, SelectorError, selector_from_set


def test_label_selector_match_labels_and_expressions() -> None:
    sel = LabelSelector.parse(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        }
    )
    assert sel is not None
    assert sel.matches({"app": "web", "tier": "a"})
    assert not sel.matches({"app": "web", "tier": "c"})
    assert not sel.matches({"app": "web", "tier": "a", "legacy": "1"})


def test_empty_selector_matches_everything_and_nil_is_none() -> None:
    empty = LabelSelector.parse({})
    assert empty is not None and empty.matches({"x": "y"}) and empty.is_empty()
    assert LabelSelector.parse(None) is None


def test_not_in_matches_when_key_missing() -> None:
    sel = LabelSelector.parse(
        {"matchExpressions": [{"key": "k", "operator": "NotIn", "values": ["v"]}]}
    )
    assert sel is not None
    assert sel.matches({})
    assert not sel.matches({"k": "v"})


def test_node_selector_terms_are_ored_and_expressions_anded() -> None:
    sel = NodeSelector.parse(
        {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "zone", "operator": "In", "values": ["z1"]},
                        {"key": "gpu", "operator": "Exists"},
                    ]
                },
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]},
            ]
        }
    )
    assert sel.matches("n1", {"zone": "z1", "gpu": "t4"})
    assert not sel.matches("n1", {"zone": "z1"})
    assert sel.matches("n9", {})


def test_empty_term_matches_nothing() -> None:
    sel = NodeSelector.parse({"nodeSelectorTerms": [{}]})
    assert not sel.matches("n", {"a": "b"})


def test_gt_lt_compare_integers_and_reject_non_integer_labels() -> None:
    sel = NodeSelector.parse(
        {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]}
            ]
        }
    )
    assert sel.matches("n", {"cores": "8"})
    assert not sel.matches("n", {"cores": "4"})
    assert not sel.matches("n", {"cores": "many"})


@pytest.mark.parametrize(
    "expr",
    [
        {"key": "k", "operator": "In"},
        {"key": "k", "operator": "Exists", "values": ["x"]},
        {"key": "k", "operator": "Bogus", "values": ["x"]},
        {"key": "k", "operator": "Gt", "values": ["a"]},
    ],
)
def test_invalid_requirements_raise(expr: dict[str, object]) -> None:
    with pytest.raises(SelectorError):
        NodeSelector.parse({"nodeSelectorTerms": [{"matchExpressions": [expr]}]})


def test_selector_from_set() -> None:
    assert selector_from_set({"a": "1"}).matches({"a": "1", "b": "2"})
    assert not selector_from_set({"a": "1"}).matches({"a": "2"})


def test_gt_lt_parse_integers_as_go_does() -> None:
    from scheduler.api.labels import parse_go_int

    assert parse_go_int("-12") == -12
    assert parse_go_int("+7") == 7
    for bad in ("1_0", " 5", "5 ", "0x10", "", "1e3", str(1 << 63)):
        assert parse_go_int(bad) is None, bad
