"""The LWS validating webhook rejects an unusable restart-backoff annotation, naming the annotation
and the rule; without the annotation (or with a good value) it admits as before."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.webhooks.leaderworkerset import validate_create, validate_update
from tests.support.builders import lws

PATH = f"metadata.annotations.{ext.ANNOTATION_RESTART_BACKOFF}"


@dataclass(frozen=True)
class Case:
    value: str | None
    want_rules: tuple[str, ...] = ()
    want_text: str = ""
    identity: str | None = None


CASES = [
    pytest.param(Case(None), id="no annotation: admitted as upstream"),
    pytest.param(Case("base=10s,cap=5m,reset=10m"), id="the documented example"),
    pytest.param(Case("base=2s"), id="base only"),
    pytest.param(
        Case("base=0s", ("restart-backoff-base-positive",), "base must be greater than 0"), id="zero base"
    ),
    pytest.param(Case("cap=1m", ("restart-backoff-base-required",), "base is required"), id="no base"),
    pytest.param(
        Case("base=1m,cap=10s", ("restart-backoff-cap-below-base",), "must not be shorter than base"),
        id="cap below base",
    ),
    pytest.param(
        Case("base=1s,jitter=2s", ("restart-backoff-unknown-key",), "supported keys: base, cap, reset"),
        id="unknown key",
    ),
    pytest.param(
        Case("base=soon", ("restart-backoff-base-duration",), "duration such as 10s"), id="bad duration"
    ),
    pytest.param(
        Case("base=10s", ("restart-backoff-hash-identity",), "groupIdentity Ordinal only", "Hash"),
        id="Hash identity: a recreated group has a new key, no streak can follow it",
    ),
    pytest.param(Case(None, identity="Hash"), id="Hash identity without the annotation"),
]


def test_table_size() -> None:
    assert len(CASES) == 10


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("operation", ["create", "update"])
def test_restart_backoff_annotation(case: Case, operation: str) -> None:
    builder = lws()
    if case.identity is not None:
        builder = builder.group_identity(case.identity)
    if case.value is not None:
        builder = builder.annotation(ext.ANNOTATION_RESTART_BACKOFF, case.value)
    obj = builder.obj()
    old = lws().group_identity(case.identity).obj() if case.identity else lws().obj()
    errors = validate_create(obj) if operation == "create" else validate_update(old, obj)
    assert tuple(err.rule for err in errors) == case.want_rules
    for err in errors:
        text = err.error()
        assert text.startswith(f'{PATH}: Invalid value: "{case.value}"'), text
        assert case.want_text in text
