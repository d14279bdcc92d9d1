"""core/quarantine/policy: the quarantine annotations parsed, and the rule each bad value breaks."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.quarantine.policy import (
    QuarantinePolicy,
    quarantine_errors,
    quarantine_opted_in,
    quarantine_policy,
)
from tests.support.builders import lws

AFTER, COOLDOWN = ext.ANNOTATION_QUARANTINE_AFTER, ext.ANNOTATION_QUARANTINE_COOLDOWN


@dataclass(frozen=True)
class Case:
    after: str | None
    cooldown: str | None = None
    want: QuarantinePolicy | None = None
    want_errors: tuple[tuple[str, str], ...] = ()  # (annotation, part of the rule)


CASES = [
    pytest.param(Case(None), id="absent: no policy, no error"),
    pytest.param(Case("3/10m", want=QuarantinePolicy(3, 600, 600)), id="cool-down defaults to the window"),
    pytest.param(Case("1/30s", "1h", QuarantinePolicy(1, 30, 3600)), id="an explicit cool-down"),
    pytest.param(Case(" 2/1m30s", want=QuarantinePolicy(2, 90, 90)), id="spaces and a compound duration"),
    pytest.param(Case("100/1h", want=QuarantinePolicy(100, 3600, 3600)), id="the ledger's capacity"),
    pytest.param(Case("3", want_errors=((AFTER, "<failures>/<window>"),)), id="no window"),
    pytest.param(Case("0/10m", want_errors=((AFTER, "from 1 to 100"),)), id="zero failures"),
    pytest.param(Case("101/10m", want_errors=((AFTER, "from 1 to 100"),)), id="beyond the ledger"),
    pytest.param(Case("-1/10m", want_errors=((AFTER, "from 1 to 100"),)), id="negative"),
    pytest.param(Case("3/soon", want_errors=((AFTER, "Go duration"),)), id="window not a duration"),
    pytest.param(Case("3/0s", want_errors=((AFTER, "greater than 0"),)), id="zero window"),
    pytest.param(Case("3/10m", "0s", want_errors=((COOLDOWN, "greater than 0"),)), id="zero cool-down"),
    pytest.param(
        Case("3/10m", "9m", want_errors=((COOLDOWN, "not be shorter than the quarantine-after window"),)),
        id="a cool-down shorter than the window",
    ),
    pytest.param(Case("3/bad", "9m", want_errors=((AFTER, "Go duration"),)), id="no window to compare with"),
    pytest.param(Case("3/10m", "later", want_errors=((COOLDOWN, "Go duration"),)), id="bad cool-down"),
    pytest.param(
        Case(None, "10m", want_errors=((COOLDOWN, f"only with {AFTER}"),)),
        id="cool-down without quarantine-after",
    ),
    pytest.param(
        Case("x/y", "z", want_errors=((AFTER, "from 1 to 100"), (COOLDOWN, "Go duration"))), id="both bad"
    ),
]


def test_table_size() -> None:
    assert len(CASES) == 17


@pytest.mark.parametrize("case", CASES)
def test_quarantine_policy(case: Case) -> None:
    builder = lws()
    if case.after is not None:
        builder = builder.annotation(AFTER, case.after)
    if case.cooldown is not None:
        builder = builder.annotation(COOLDOWN, case.cooldown)
    obj = builder.obj()
    assert quarantine_policy(obj) == case.want
    errors = quarantine_errors(obj)
    assert [(e.key, e.rule) for e in errors] == [
        (key, next(e.rule for e in errors if e.key == key and part in e.rule))
        for key, part in case.want_errors
    ]
    assert quarantine_opted_in(obj) == (case.after is not None)
