"""Admission of `leaderWorkerTemplate.restartBackoff` (upstream main after v1.0): upstream's webhook
test table, row for row, on create and on update, with the field paths; the defaulting of a present
field; the same rules on a DisaggregatedSet role."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.webhooks import disaggregatedset as ds_webhook
from leaderworkerset.webhooks.leaderworkerset import default_lws, validate_create, validate_update
from tests.support.builders import ds, ds_role, lws

FIELD = "spec.leaderWorkerTemplate.restartBackoff"
RECREATE = c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART


@dataclass(frozen=True)
class Case:
    policy: str
    field: tuple[int | None, int | None] | None  # (baseSeconds, capSeconds); None: no field
    want: tuple[str, ...] = ()  # "<path>: <type>: ..." prefixes and upstream's substring, per error


# Upstream's TestGeneralValidateRestartBackoff, every row (the messages are upstream's substrings).
UPSTREAM_TABLE = [
    pytest.param(Case(c.RESTART_POLICY_NONE, None), id="nil RestartBackoff is always allowed"),
    pytest.param(Case(RECREATE, (10, 300)), id="with RecreateGroupOnPodRestart is allowed"),
    pytest.param(
        Case(c.RESTART_POLICY_RECREATE_GROUP_AFTER_START, (5, 60)),
        id="with RecreateGroupAfterStart is allowed",
    ),
    pytest.param(
        Case(
            c.RESTART_POLICY_NONE,
            (10, 300),
            (f"{FIELD}: Forbidden: restartBackoff is only supported when restartPolicy recreates the group",),
        ),
        id="with None policy is rejected",
    ),
    pytest.param(
        Case(RECREATE, (0, 300), (f"{FIELD}.baseSeconds: Invalid value: 0: must be greater than 0",)),
        id="non-positive Base",
    ),
    pytest.param(
        Case(RECREATE, (10, -1), (f"{FIELD}.capSeconds: Invalid value: -1: must be greater than 0",)),
        id="non-positive Cap",
    ),
    pytest.param(
        Case(
            RECREATE,
            (600, 300),
            (f"{FIELD}.baseSeconds: Invalid value: 600: baseSeconds must not be greater than capSeconds",),
        ),
        id="Base > Cap",
    ),
    pytest.param(
        Case(
            RECREATE,
            (None, 5),
            (f"{FIELD}.baseSeconds: Invalid value: 10: baseSeconds must not be greater than capSeconds",),
        ),
        id="nil Base and Cap < default Base",
    ),
    pytest.param(
        Case(
            RECREATE,
            (600, None),
            (f"{FIELD}.baseSeconds: Invalid value: 600: baseSeconds must not be greater than capSeconds",),
        ),
        id="Base > default Cap and nil Cap",
    ),
    pytest.param(Case(RECREATE, (20, None)), id="valid single-field Base"),
    pytest.param(Case(RECREATE, (None, 60)), id="valid single-field Cap"),
]
# Ours beside upstream's: the deprecated Default policy (an alias of None), and Hash identity, which
# the back-off refuses as the annotation does (a recreated Hash group gets a new key).
OUR_ROWS = [
    pytest.param(
        Case(
            c.RESTART_POLICY_DEPRECATED_DEFAULT, (10, 300), (f"{FIELD}: Forbidden: restartBackoff is only",)
        ),
        id="with the deprecated Default policy is rejected",
    ),
    pytest.param(
        Case(
            "Hash",
            (10, 300),
            (f"{FIELD}: Forbidden: restart back-off is supported with groupIdentity Ordinal",),
        ),
        id="with groupIdentity Hash is rejected",
    ),
    pytest.param(
        Case(
            RECREATE,
            (0, -1),
            (
                f"{FIELD}.baseSeconds: Invalid value: 0: must be greater than 0",
                f"{FIELD}.capSeconds: Invalid value: -1: must be greater than 0",
            ),
        ),
        id="both non-positive: both named",
    ),
]
RAN: list[str] = []


def _lws(case: Case) -> dict[str, object]:
    builder = lws()
    if case.policy == "Hash":
        builder = builder.group_identity(c.GROUP_IDENTITY_HASH).restart_policy(RECREATE)
    else:
        builder = builder.restart_policy(case.policy)
    if case.field is not None:
        builder = builder.restart_backoff(*case.field)
    return builder.obj()


@pytest.mark.parametrize("case", [*UPSTREAM_TABLE, *OUR_ROWS])
@pytest.mark.parametrize("operation", ["create", "update"])
def test_restart_backoff_field(case: Case, operation: str, request: pytest.FixtureRequest) -> None:
    obj = _lws(case)
    old = lws().group_identity(c.GROUP_IDENTITY_HASH).obj() if case.policy == "Hash" else lws().obj()
    errors = validate_create(obj) if operation == "create" else validate_update(old, obj)
    texts = [err.error() for err in errors]
    assert len(texts) == len(case.want), texts
    for text, want in zip(texts, case.want, strict=True):
        assert text.startswith(want), text
    RAN.append(request.node.callspec.id)


def test_every_row_ran() -> None:
    # 11 rows of upstream's table and 3 of ours, each on create and on update.
    assert len(UPSTREAM_TABLE) == 11
    assert len(RAN) == 2 * (len(UPSTREAM_TABLE) + len(OUR_ROWS)) == 28


@pytest.mark.parametrize(
    ("field", "want"),
    [
        pytest.param(None, None, id="absent stays absent"),
        pytest.param((None, None), {"baseSeconds": 10, "capSeconds": 300}, id="empty {} gets the defaults"),
        pytest.param((20, None), {"baseSeconds": 20, "capSeconds": 300}, id="missing cap gets its default"),
        pytest.param((None, 60), {"baseSeconds": 10, "capSeconds": 60}, id="missing base gets its default"),
        pytest.param((1, 2), {"baseSeconds": 1, "capSeconds": 2}, id="given values are kept"),
    ],
)
def test_defaulting(field: tuple[int | None, int | None] | None, want: dict[str, int] | None) -> None:
    builder = lws()
    if field is not None:
        builder = builder.restart_backoff(*field)
    once = default_lws(builder.obj())
    assert once["spec"]["leaderWorkerTemplate"].get("restartBackoff") == want
    assert default_lws(once) == once


def test_a_disaggregated_role_is_checked_at_its_own_path() -> None:
    decode = ds_role("decode")
    decode["spec"]["leaderWorkerTemplate"].update(
        restartPolicy=c.RESTART_POLICY_NONE, restartBackoff={"baseSeconds": 10}
    )
    _, errors = ds_webhook.validate(ds("test", ds_role("prefill"), decode))
    assert [err.error() for err in errors] == [
        "spec.roles[1].spec.leaderWorkerTemplate.restartBackoff: Forbidden: restartBackoff is only supported "
        "when restartPolicy recreates the group"
    ]
