"""DisaggregatedSet validating webhook, mirroring upstream's DS webhook tests."""

from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import upstreammain as um
from leaderworkerset.webhooks.disaggregatedset import validate
from tests.support.builders import ds, ds_role

Obj = dict[str, Any]
EXTERNAL = {"mode": c.ROLE_SCALING_EXTERNAL}


@dataclass(frozen=True)
class Case:
    ds: Obj
    want_rules: tuple[str, ...] = ()
    want_errors: tuple[str, ...] = ()
    want_warnings: tuple[str, ...] = ()


def role_with(name: str, replicas: int | None = 2, **extra: Any) -> Obj:
    role = ds_role(name, replicas)
    role.update(extra)
    return role


def rolling(role: Obj, **config: Any) -> Obj:
    role["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": config}
    return role


CASES = [
    pytest.param(Case(ds()), id="valid two-role set"),
    pytest.param(
        Case(
            ds("test", rolling(ds_role("prefill"), partition=1, maxUnavailable=1), ds_role("decode")),
            want_rules=("ds-no-partition",),
            want_errors=(
                "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.partition: "
                "Forbidden: partition is "
                "not supported by DisaggregatedSet; rolling updates are managed across roles by the "
                "DisaggregatedSet controller",
            ),
        ),
        id="partition is forbidden",
    ),
    pytest.param(
        Case(
            ds(
                "test",
                {
                    **ds_role("prefill"),
                    "spec": {**ds_role("prefill")["spec"], "rolloutStrategy": {"type": "Recreate"}},
                },
                ds_role("decode"),
            ),
            want_rules=("ds-rollout-type",),
            want_errors=(
                'spec.roles[0].spec.rolloutStrategy.type: Unsupported value: "Recreate": '
                'supported values: "RollingUpdate", ""',
            ),
        ),
        id="only RollingUpdate",
    ),
    pytest.param(
        Case(
            ds("test", rolling(ds_role("prefill"), maxSurge="0%", maxUnavailable="0%"), ds_role("decode")),
            want_rules=("surge-and-unavailable-zero",),
        ),
        id="0% surge and unavailable with replicas",
    ),
    pytest.param(
        Case(ds("test", rolling(ds_role("prefill"), maxSurge=0, maxUnavailable=1), ds_role("decode"))),
        id="only one of surge and unavailable is zero",
    ),
    pytest.param(
        Case(ds("test", rolling(ds_role("prefill", 0), maxSurge=0, maxUnavailable=0), ds_role("decode", 0))),
        id="zero replicas are exempt",
    ),
    pytest.param(
        Case(
            ds("ds", role_with("prefill", 3, scaling=EXTERNAL), ds_role("decode")),
            want_warnings=(
                'role "prefill" sets scaling.mode: External and spec.replicas: 3 — spec.replicas is ignored; '
                'drive replicas via DisaggregatedSetRoleScaler "ds-prefill" instead',
            ),
        ),
        id="External role with replicas warns",
    ),
    pytest.param(
        Case(
            ds("ds", role_with("prefill", scaling=EXTERNAL), ds_role("decode"), slices=2),
            want_rules=("ds-external-single-slice",),
            want_warnings=(
                'role "prefill" sets scaling.mode: External and spec.replicas: 2 — spec.replicas is ignored; '
                'drive replicas via DisaggregatedSetRoleScaler "ds-prefill" instead',
            ),
        ),
        id="External role forbids slices above 1",
    ),
    pytest.param(
        Case(
            ds("a" * 250, role_with("prefill", 1, scaling=EXTERNAL), ds_role("decode", 1)),
            want_rules=("ds-scaler-name-length", "ds-generated-name-length", "ds-generated-name-length"),
        ),
        id="scaler name beyond 253 characters",
    ),
    pytest.param(
        Case(
            ds(
                "test",
                role_with(
                    "prefill",
                    2,
                    spec={
                        **ds_role("prefill")["spec"],
                        "groupIdentity": "Hash",
                        "leaderWorkerTemplate": {"size": 2, "subGroupPolicy": {"subGroupSize": 2}},
                    },
                ),
            ),
        ),
        id="Hash role with subGroupPolicy is accepted",
    ),
    pytest.param(
        Case(
            ds(
                "test",
                role_with(
                    "prefill",
                    2,
                    spec={
                        **ds_role("prefill")["spec"],
                        "groupIdentity": "Hash",
                        "leaderWorkerTemplate": {
                            "size": 1,
                            "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
                        },
                    },
                ),
            ),
            want_rules=("hash-no-volume-claim-templates",),
        ),
        id="Hash role with volumeClaimTemplates is rejected",
    ),
    pytest.param(
        Case(
            ds(
                "test",
                role_with(
                    "prefill",
                    2,
                    spec={
                        **ds_role("prefill")["spec"],
                        "groupIdentity": "Hash",
                        "leaderWorkerTemplate": {"size": 1, "maxGroupRestarts": 1},
                    },
                ),
            ),
        ),
        id="Hash role with maxGroupRestarts is accepted",
    ),
    pytest.param(
        Case(
            ds(
                "test",
                ds_role("prefill"),
                ds_role("decode"),
                placementPolicy={"type": c.PLACEMENT_EXCLUSIVE_SLICE},
            ),
            want_rules=("ds-placement-topology",),
            want_errors=(
                "spec.placementPolicy.topology: Required value: topology is required when type is not None",
            ),
        ),
        id="placement needs a topology",
    ),
    pytest.param(
        Case(
            ds(
                "test",
                role_with("prefill", metadata={"annotations": {c.ANNOTATION_EXCLUSIVE_TOPOLOGY: "rack"}}),
                ds_role("decode"),
                placementPolicy={"type": c.PLACEMENT_EXCLUSIVE_TOPOLOGY, "topology": "zone"},
            ),
            want_rules=("ds-placement-exclusive-conflict",),
            want_errors=(
                f'spec.roles[0]: Forbidden: the "{c.ANNOTATION_EXCLUSIVE_TOPOLOGY}" annotation must not be '
                "combined with a non-None spec.placementPolicy.type (ExclusiveTopology)",
            ),
        ),
        id="placement conflicts with exclusive-topology",
    ),
    pytest.param(
        Case(
            ds("test", ds_role("prefill"), ds_role("decode"), placementPolicy={"type": c.PLACEMENT_NONE}),
        ),
        id="None placement needs nothing",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_validate(case: Case) -> None:
    warnings, errors = validate(case.ds)
    assert tuple(err.rule for err in errors) == case.want_rules
    assert tuple(warnings) == case.want_warnings
    if case.want_errors:
        assert tuple(err.error() for err in errors) == case.want_errors


def _hash_ds(name_length: int, size: int) -> Obj:
    spec = {"replicas": 2, "groupIdentity": c.GROUP_IDENTITY_HASH, "leaderWorkerTemplate": {"size": size}}
    return ds("a" * name_length, {"name": "prefill", "spec": spec})


@pytest.mark.parametrize(
    ("name_length", "size", "rejected"),
    [
        pytest.param(16, 2, False, id="size 2 at the limit"),
        pytest.param(17, 2, True, id="size 2 over the limit"),
        pytest.param(35, 1, False, id="size 1 at the limit"),
        pytest.param(36, 1, True, id="size 1 over the limit"),
    ],
)
def test_hash_generated_name_limits(name_length: int, size: int, rejected: bool) -> None:
    _, errors = validate(_hash_ds(name_length, size))
    assert bool(errors) is rejected


@pytest.mark.parametrize(
    ("ds_name_length", "replicas", "slices", "rejected"),
    [
        # 63 = len(ds) + 3 + slice digits + 8 + len("prefill") + 1 + group-index digits + 11
        pytest.param(31, 10, 1, False, id="one-digit group index at the limit"),
        pytest.param(32, 10, 1, True, id="one-digit group index over the limit"),
        pytest.param(30, 11, 1, False, id="two-digit group index at the limit"),
        pytest.param(31, 11, 1, True, id="two-digit group index over the limit"),
        pytest.param(30, 10, 11, False, id="two-digit slice index at the limit"),
        pytest.param(31, 10, 11, True, id="two-digit slice index over the limit"),
    ],
)
def test_ordinal_generated_name_limits(
    ds_name_length: int, replicas: int, slices: int, rejected: bool
) -> None:
    subject = ds("a" * ds_name_length, ds_role("prefill", replicas), ds_role("d", 1), slices=slices)
    _, errors = validate(subject)
    assert [err.field for err in errors] == (["spec.roles[0].name"] if rejected else [])


def test_generated_name_message() -> None:
    _, errors = validate(ds("a" * 33, ds_role("prefill", 10), ds_role("d", 1)))
    assert errors[0].error() == (
        'spec.roles[0].name: Invalid value: "prefill": the generated names (65 '
        "chars) would exceed the DNS-1035 "
        "limit of 63 characters (accounting for StatefulSet revision hash "
        "labels); reduce the DisaggregatedSet "
        "name and/or role name (combined limit: 38 characters)"
    )


def test_upstream_mains_revision_hash_version_is_refused_naming_the_annotation_and_the_rule() -> None:
    """Upstream main after v1.0 stamps `revision-hash-version: v2` on new sets; this controller
    computes only v1.0's hash, so honouring neither silently is the rule (core/setannotations.py)."""
    body = ds("test", ds_role("prefill"), ds_role("decode"))
    assert validate(body)[1] == []
    body["metadata"]["annotations"] = {um.ANNOTATION_DS_REVISION_HASH_VERSION: "v2"}
    (error,) = validate(body)[1]
    assert error.rule == "revision-hash-version"
    assert error.error() == (
        f'metadata.annotations.{um.ANNOTATION_DS_REVISION_HASH_VERSION}: Invalid value: "v2": must be '
        "absent: this controller computes the v1.0 revision hash only (upstream main's later algorithm "
        "is not implemented)"
    )
