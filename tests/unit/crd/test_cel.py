"""The DisaggregatedSet replicas rule, evaluated with cel-python over the generated CRD's rule."""

from __future__ import annotations

from typing import Any

import celpy
import pytest

from leaderworkerset.crd.markers import DS_REPLICAS_MESSAGE, DS_REPLICAS_RULE
from leaderworkerset.crd.packaged import crd_documents


def _role(name: str, replicas: int | None = None, mode: str | None = None) -> dict[str, Any]:
    role: dict[str, Any] = {"name": name, "spec": {} if replicas is None else {"replicas": replicas}}
    if mode is not None:
        role["scaling"] = {"mode": mode}
    return role


def _evaluate(roles: list[dict[str, Any]]) -> bool:
    env = celpy.Environment()
    program = env.program(env.compile(DS_REPLICAS_RULE))
    return bool(program.evaluate({"self": celpy.json_to_cel({"roles": roles})}))


RULE_CASES = [
    pytest.param([_role("a", 1), _role("b", 3)], True, id="all positive"),
    pytest.param([_role("a", 0), _role("b", 0)], True, id="all zero"),
    pytest.param([_role("a"), _role("b")], True, id="all unset"),
    pytest.param([_role("a"), _role("b", 0)], True, id="unset and zero"),
    pytest.param([_role("a", 1), _role("b", 0)], False, id="positive and zero"),
    pytest.param([_role("a", 2), _role("b")], False, id="positive and unset"),
    pytest.param([_role("a", 1), _role("b", mode="External")], True, id="external role ignored"),
    pytest.param([_role("a", 0), _role("b", 5, mode="External")], True, id="external replicas ignored"),
    pytest.param([_role("a", 1), _role("b", 0, mode="Static")], False, id="explicit Static counts"),
    pytest.param([_role("a", mode="External"), _role("b", mode="External")], True, id="only external roles"),
    # single-role sets (upstream main after v1.0): one role always agrees with itself
    pytest.param([_role("solo", 3)], True, id="single role positive"),
    pytest.param([_role("solo", 0)], True, id="single role zero"),
    pytest.param([_role("solo")], True, id="single role unset"),
    pytest.param([_role("solo", mode="External")], True, id="single external role"),
    pytest.param([], True, id="no roles (left to minItems)"),
]


@pytest.mark.parametrize(("roles", "want"), RULE_CASES)
def test_ds_replicas_rule(roles: list[dict[str, Any]], want: bool) -> None:
    assert _evaluate(roles) is want


def test_the_rule_table_has_every_case() -> None:
    assert len(RULE_CASES) == 15


def test_the_generated_ds_crd_carries_the_rule_on_spec() -> None:
    ds = crd_documents()[1]
    spec = ds["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["x-kubernetes-validations"] == [{"message": DS_REPLICAS_MESSAGE, "rule": DS_REPLICAS_RULE}]


def _rules(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [rule["rule"] for rule in node.get("x-kubernetes-validations", [])]
        return own + [r for value in node.values() for r in _rules(value)]
    if isinstance(node, list):
        return [r for value in node for r in _rules(value)]
    return []


def test_every_cel_rule_in_the_generated_crds_compiles() -> None:
    rules = [rule for crd in crd_documents() for rule in _rules(crd["spec"])]
    assert rules, "expected at least the DisaggregatedSet replicas rule"
    env = celpy.Environment()
    for rule in rules:
        env.compile(rule)
