"""LeaderWorkerSet validating webhook: upstream's create/update table plus the v1.0
rules, with the exact field paths and messages apimachinery renders."""

from dataclasses import dataclass, field

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat.fielderrors import PERCENT_MESSAGE, aggregate_message
from leaderworkerset.webhooks.leaderworkerset import validate_create, validate_update
from leaderworkerset.webhooks.scheduling import SchedulingAdmission
from tests.support.builders import LeaderWorkerSetBuilder, lws

SGS = "spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize"
RUC = "spec.rolloutStrategy.rollingUpdateConfiguration"


@dataclass(frozen=True)
class Case:
    new: LeaderWorkerSetBuilder
    old: LeaderWorkerSetBuilder | None = None
    want_rules: tuple[str, ...] = ()
    want_errors: tuple[str, ...] = field(default=())
    scheduling: SchedulingAdmission = field(default_factory=SchedulingAdmission)


def run(case: Case) -> tuple[list[str], list[str]]:
    if case.old is None:
        errors = validate_create(case.new.obj(), case.scheduling)
    else:
        errors = validate_update(case.old.obj(), case.new.obj(), case.scheduling)
    for err in errors:
        assert err.field
        assert err.rule
    return [err.rule for err in errors], [err.error() for err in errors]


CREATE = [
    pytest.param(Case(lws()), id="valid object"),
    pytest.param(
        Case(
            lws().name("2cube"),
            want_rules=("metadata-name",),
            want_errors=(
                'metadata.name: Invalid value: "2cube": a DNS-1035 label must consist '
                "of lower case alphanumeric "
                "characters or '-', start with an alphabetic character, and end with "
                "an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ),
        ),
        id="invalid name",
    ),
    pytest.param(
        Case(
            lws().replicas(100000).size(1000000),
            want_rules=("replicas-size-product",),
            want_errors=(
                "spec.replicas: Invalid value: 100000: the product of replicas and "
                "worker replicas must not exceed"
                " 2147483647",
            ),
        ),
        id="replicas times size beyond int32",
    ),
    pytest.param(
        Case(
            lws().replicas(2).size(-1),
            want_rules=("size-min",),
            want_errors=(
                "spec.leaderWorkerTemplate.size: Invalid value: -1: size must be equal or greater than 1",
            ),
        ),
        id="invalid size",
    ),
    pytest.param(
        Case(
            lws().size(2).replicas(-1),
            want_rules=("replicas-min",),
            want_errors=("spec.replicas: Invalid value: -1: replicas must be equal or greater than 0",),
        ),
        id="negative replicas",
    ),
    pytest.param(
        Case(
            lws().size(2).replicas(1000001),
            want_rules=("replicas-max",),
            want_errors=(
                "spec.replicas: Invalid value: 1000001: replicas must be equal or less than 1000000",
            ),
        ),
        id="replicas beyond 1000000",
    ),
    pytest.param(
        Case(
            lws().size(2).subgroup(-1),
            want_rules=("subgroup-size-min",),
            want_errors=(f"{SGS}: Invalid value: -1: subGroupSize must be equal or greater than 1",),
        ),
        id="negative subGroupSize",
    ),
    pytest.param(
        Case(
            lws().size(2).subgroup(3),
            want_rules=("subgroup-size-divides", "subgroup-size-max"),
            want_errors=(
                f"{SGS}: Invalid value: 3: size or size - 1 must be divisible by subGroupSize",
                f"{SGS}: Invalid value: 3: subGroupSize cannot be larger than size",
            ),
        ),
        id="subGroupSize larger than size",
    ),
    pytest.param(
        Case(
            lws().size(4).subgroup(2, c.SUBGROUP_POLICY_LEADER_EXCLUDED),
            want_rules=("subgroup-leader-excluded-divides",),
            want_errors=(
                f"{SGS}: Invalid value: 2: size-1 must be divisible by subGroupSize "
                "when using LeaderExcluded",
            ),
        ),
        id="LeaderExcluded needs size-1 divisible",
    ),
    pytest.param(Case(lws().size(5).subgroup(2, c.SUBGROUP_POLICY_LEADER_EXCLUDED)), id="LeaderExcluded 5/2"),
    pytest.param(Case(lws().size(9).subgroup(4)), id="leader as extra pod 9/4"),
    pytest.param(
        Case(lws().size(2).subgroup(None), want_rules=("subgroup-size-required",)),
        id="subGroupPolicy without size",
    ),
    pytest.param(
        Case(
            lws().annotation(c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY, "rack"),
            want_rules=("subgroup-exclusive-needs-subgroup",),
            want_errors=(
                f'metadata.annotations.{c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY}: Invalid value: "rack": '
                "cannot have subgroup-exclusive-topology without subGroupSize set",
            ),
        ),
        id="subgroup exclusive topology without subgroups",
    ),
    pytest.param(
        Case(lws().annotation(c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY, "rack").size(4).subgroup(2)),
        id="subgroup exclusive topology with subgroups",
    ),
    pytest.param(
        Case(lws().rolling_update(maxUnavailable=10)), id="maxUnavailable above replicas is allowed"
    ),
    pytest.param(
        Case(
            lws().rolling_update(maxUnavailable="200%"),
            want_rules=("maxUnavailable-percent-max",),
            want_errors=(
                f"{RUC}.maxUnavailable: Invalid value: intstr.IntOrString{{Type:1, "
                'IntVal:0, StrVal:"200%"}: '
                "must not be greater than 100%",
            ),
        ),
        id="maxUnavailable above 100%",
    ),
    pytest.param(
        Case(
            lws().rolling_update(maxUnavailable=-1),
            want_rules=("maxUnavailable-format",),
            want_errors=(
                f'{RUC}.maxUnavailable: Invalid value: intstr.IntOrString{{Type:0, IntVal:-1, StrVal:""}}: '
                "must be greater than or equal to 0",
            ),
        ),
        id="negative maxUnavailable",
    ),
    pytest.param(Case(lws().rolling_update(maxSurge=10)), id="maxSurge above replicas is allowed"),
    pytest.param(
        Case(lws().rolling_update(maxSurge="200%"), want_rules=("maxSurge-percent-max",)),
        id="maxSurge above 100%",
    ),
    pytest.param(
        Case(lws().rolling_update(maxSurge=-1), want_rules=("maxSurge-format",)), id="negative maxSurge"
    ),
    pytest.param(
        Case(
            lws().rolling_update(maxSurge="thirty%"),
            want_rules=("maxSurge-format", "maxSurge-scale"),
            want_errors=(
                f'{RUC}.maxSurge: Invalid value: intstr.IntOrString{{Type:1, IntVal:0, StrVal:"thirty%"}}: '
                f"{PERCENT_MESSAGE}",
                f'{RUC}.maxSurge: Invalid value: intstr.IntOrString{{Type:1, IntVal:0, StrVal:"thirty%"}}: '
                "invalid value",
            ),
        ),
        id="maxSurge not a percentage",
    ),
    pytest.param(
        Case(
            lws().rolling_update(maxUnavailable=0),
            want_rules=("surge-and-unavailable-zero",),
            want_errors=(
                f'{RUC}.maxUnavailable: Invalid value: intstr.IntOrString{{Type:0, IntVal:0, StrVal:""}}: '
                "must not be 0 when `maxSurge` is 0",
            ),
        ),
        id="maxUnavailable and maxSurge both 0",
    ),
    pytest.param(
        Case(lws().rolling_update(maxUnavailable=0, maxSurge=1)), id="maxUnavailable 0 with maxSurge 1"
    ),
    pytest.param(
        Case(lws().replicas(0).rolling_update(maxUnavailable="25%", maxSurge="25%")),
        id="zero replicas allow any surge and unavailable",
    ),
    pytest.param(
        Case(
            lws().rolling_update(maxUnavailable="25%", maxSurge=0), want_rules=("surge-and-unavailable-zero",)
        ),
        id="25% of 2 rounds down to 0",
    ),
    pytest.param(
        Case(
            lws().rolling_update(partition=-1),
            want_rules=("partition-min",),
            want_errors=(f"{RUC}.partition: Invalid value: -1: must be greater than or equal to 0",),
        ),
        id="negative partition",
    ),
    pytest.param(Case(lws().replicas(3).rolling_update(partition=5)), id="partition above replicas"),
    pytest.param(Case(lws().replicas(3).rolling_update(partition=3)), id="partition equal to replicas"),
    pytest.param(Case(lws().replicas(None).size(None)), id="nil replicas and size are treated as 1"),
    pytest.param(
        Case(lws().spec_field("groupIdentity", c.GROUP_IDENTITY_HASH).subgroup(1)),
        id="Hash accepts subGroupPolicy",
    ),
    pytest.param(
        Case(
            lws().spec_field("groupIdentity", c.GROUP_IDENTITY_HASH).rolling_update(partition=1),
            want_rules=("hash-no-partition",),
        ),
        id="Hash rejects a partition",
    ),
    pytest.param(
        Case(
            lws()
            .spec_field("groupIdentity", c.GROUP_IDENTITY_HASH)
            .spec_field(
                "leaderWorkerTemplate",
                {**lws().template, "volumeClaimTemplates": [{"metadata": {"name": "d"}}]},
            ),
            want_rules=("hash-no-volume-claim-templates",),
            want_errors=(
                "spec.leaderWorkerTemplate.volumeClaimTemplates: Forbidden: "
                "volumeClaimTemplates are not supported with groupIdentity Hash",
            ),
        ),
        id="Hash rejects volumeClaimTemplates",
    ),
    pytest.param(
        Case(
            lws()
            .spec_field("groupIdentity", c.GROUP_IDENTITY_HASH)
            .spec_field("groupReplacementPolicy", "Immediate")
        ),
        id="Immediate with Hash",
    ),
    pytest.param(
        Case(lws().spec_field("groupReplacementPolicy", "Immediate"), want_rules=("immediate-needs-hash",)),
        id="Immediate with Ordinal is rejected",
    ),
    pytest.param(Case(lws().max_group_restarts(3)), id="maxGroupRestarts with RecreateGroupOnPodRestart"),
    pytest.param(
        Case(lws().restart_policy(c.RESTART_POLICY_RECREATE_GROUP_AFTER_START).max_group_restarts(0)),
        id="maxGroupRestarts with RecreateGroupAfterStart",
    ),
    pytest.param(
        Case(
            lws().restart_policy(c.RESTART_POLICY_NONE).max_group_restarts(1),
            want_rules=("max-group-restarts-policy",),
            want_errors=(
                "spec.leaderWorkerTemplate.maxGroupRestarts: Invalid value: 1: "
                "maxGroupRestarts is only supported when restartPolicy recreates the group",
            ),
        ),
        id="maxGroupRestarts with None is rejected",
    ),
    pytest.param(
        Case(lws().spec_field("scheduling", {}), want_rules=("scheduling-feature-gate",)),
        id="scheduling needs the feature gate",
    ),
    pytest.param(
        Case(
            lws().spec_field("scheduling", {}),
            want_rules=("scheduling-provider",),
            scheduling=SchedulingAdmission(feature_gate_enabled=True),
        ),
        id="scheduling needs a provider",
    ),
    pytest.param(
        Case(
            lws().spec_field("scheduling", {}),
            scheduling=SchedulingAdmission(feature_gate_enabled=True, provider="kubernetes"),
        ),
        id="scheduling opt-in accepted",
    ),
    pytest.param(
        Case(
            lws().spec_field("scheduling", {}),
            want_rules=("scheduling-workload-api",),
            scheduling=SchedulingAdmission(
                feature_gate_enabled=True, provider="kubernetes", workload_api_available=lambda: False
            ),
        ),
        id="kubernetes provider needs the Workload API",
    ),
    pytest.param(
        Case(
            lws().spec_field("scheduling", {}),
            want_rules=("scheduling-provider-supported",),
            scheduling=SchedulingAdmission(feature_gate_enabled=True, provider="yarn"),
        ),
        id="unsupported provider",
    ),
    pytest.param(
        Case(
            lws().spec_field(
                "scheduling", {"schedulingPolicy": {"basic": {}}, "replica": {"disruptionMode": {}}}
            ),
            want_rules=("scheduling-one-level",),
            scheduling=SchedulingAdmission(feature_gate_enabled=True, provider="kubernetes"),
        ),
        id="scheduling with two active levels",
    ),
    pytest.param(
        Case(
            lws().size(1).spec_field("scheduling", {"replica": {"leader": {}}}),
            want_rules=("scheduling-role-size",),
            scheduling=SchedulingAdmission(feature_gate_enabled=True, provider="kubernetes"),
        ),
        id="role scheduling needs size 2",
    ),
    pytest.param(
        Case(
            lws().spec_field("startupPolicy", c.STARTUP_POLICY_LEADER_READY).spec_field("scheduling", {}),
            want_rules=("scheduling-gang-leader-ready",),
            scheduling=SchedulingAdmission(feature_gate_enabled=True, provider="kubernetes"),
        ),
        id="replica gang with LeaderReady",
    ),
    pytest.param(
        Case(
            lws().spec_field("scheduling", {"schedulingPolicy": {"basic": {}}}),
            want_rules=("volcano-replica-only",),
            scheduling=SchedulingAdmission(feature_gate_enabled=True, provider="volcano"),
        ),
        id="volcano only at replica level",
    ),
]


@pytest.mark.parametrize("case", CREATE)
def test_create(case: Case) -> None:
    rules, messages = run(case)
    assert tuple(rules) == case.want_rules
    if case.want_errors:
        assert tuple(messages) == case.want_errors


UPDATE = [
    pytest.param(Case(lws().size(3), old=lws().size(2)), id="size can change"),
    pytest.param(
        Case(
            lws().replicas(100000).size(100000000),
            old=lws().replicas(100000).size(1),
            want_rules=("replicas-size-product",),
        ),
        id="update beyond int32 product",
    ),
    pytest.param(
        Case(lws().replicas(-1), old=lws().replicas(1), want_rules=("replicas-min",)), id="negative replicas"
    ),
    pytest.param(Case(lws().replicas(3), old=lws().replicas(1)), id="replicas can change"),
    pytest.param(
        Case(lws().replicas(1000001), old=lws().replicas(1), want_rules=("replicas-max",)),
        id="replicas beyond 1000000",
    ),
    pytest.param(
        Case(
            lws().size(2).subgroup(2),
            old=lws().size(2).subgroup(1),
            want_rules=("subgroup-size-immutable",),
            want_errors=(f"{SGS}: Invalid value: 2: field is immutable",),
        ),
        id="subGroupSize is immutable",
    ),
    pytest.param(
        Case(
            lws().size(2).subgroup(2),
            old=lws().size(2),
            want_rules=("subgroup-policy-add",),
            want_errors=(
                f"{SGS}: Invalid value: 2: cannot enable subGroupSize after the lws is already created",
            ),
        ),
        id="subGroupPolicy cannot be added",
    ),
    pytest.param(
        Case(
            lws().size(2),
            old=lws().size(2).subgroup(1),
            want_rules=("subgroup-policy-remove",),
            want_errors=(f"{SGS}: Invalid value: 1: cannot remove subGroupSize after enabled",),
        ),
        id="subGroupPolicy cannot be removed",
    ),
    pytest.param(
        Case(lws().size(2).subgroup(1), old=lws().size(2).subgroup(None)),
        id="legacy nil subGroupSize gains one",
    ),
    pytest.param(
        Case(
            lws().spec_field("networkConfig", {"subdomainPolicy": c.SUBDOMAIN_SHARED}),
            old=lws().spec_field("networkConfig", {"subdomainPolicy": c.SUBDOMAIN_UNIQUE_PER_REPLICA}),
        ),
        id="subdomainPolicy UniquePerReplica to Shared",
    ),
    pytest.param(
        Case(
            lws().spec_field("networkConfig", {}),
            old=lws(),
            want_rules=("subdomain-policy-null",),
            want_errors=(
                'spec.networkConfig.subdomainPolicy: Invalid value: "Shared": cannot '
                "set subdomainPolicy as null",
            ),
        ),
        id="subdomainPolicy cannot become null",
    ),
    pytest.param(
        Case(
            lws().spec_field("networkConfig", {}),
            old=lws().spec_field("networkConfig", None),
            want_rules=("subdomain-policy-null",),
        ),
        id="nil old networkConfig does not crash",
    ),
    pytest.param(
        Case(
            lws().spec_field("groupIdentity", c.GROUP_IDENTITY_ORDINAL),
            old=lws().spec_field("groupIdentity", c.GROUP_IDENTITY_HASH),
            want_rules=("group-identity-immutable",),
            want_errors=('spec.groupIdentity: Invalid value: "Ordinal": field is immutable',),
        ),
        id="groupIdentity Hash to Ordinal is rejected",
    ),
    pytest.param(
        Case(
            lws().spec_field("groupIdentity", c.GROUP_IDENTITY_ORDINAL),
            old=lws().spec_field("groupIdentity", ""),
        ),
        id="groupIdentity empty to Ordinal is allowed",
    ),
    pytest.param(Case(lws().rolling_update(partition=2), old=lws().replicas(5)), id="partition can change"),
    pytest.param(
        Case(lws().rolling_update(partition=-1), old=lws(), want_rules=("partition-min",)),
        id="negative partition",
    ),
    pytest.param(
        Case(lws().spec_field("scheduling", {}), old=lws(), want_rules=("scheduling-add",)),
        id="scheduling cannot be added after creation",
    ),
    pytest.param(
        Case(
            lws().spec_field("scheduling", {"replica": {}}).replicas(0),
            old=lws().spec_field("scheduling", {}),
        ),
        id="existing scheduling stays updatable without gate or provider",
    ),
    pytest.param(
        Case(
            lws().spec_field("scheduling", {"schedulingPolicy": {"basic": {}}}),
            old=lws().spec_field("scheduling", {}),
            want_rules=("scheduling-level-immutable",),
        ),
        id="active scheduling level is immutable",
    ),
    pytest.param(
        Case(lws().size(4).spec_field("scheduling", {}), old=lws().spec_field("scheduling", {})),
        id="size may change under replica scheduling",
    ),
    pytest.param(
        Case(
            lws().spec_field("scheduling", {}).annotation(c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME, "t"),
            old=lws().spec_field("scheduling", {}),
            want_rules=("scheduling-delegation-immutable",),
        ),
        id="delegation annotation cannot be added once scheduling is set",
    ),
]


@pytest.mark.parametrize("case", UPDATE)
def test_update(case: Case) -> None:
    rules, messages = run(case)
    assert tuple(rules) == case.want_rules
    if case.want_errors:
        assert tuple(messages) == case.want_errors


def test_delegated_lws_rejects_role_mode() -> None:
    body = (
        lws()
        .spec_field("scheduling", {"replica": {"leader": {}}})
        .annotation(c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME, "template")
    )
    body_obj = body.obj()
    body_obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "x/v1", "kind": "P", "name": "p", "controller": True}
    ]
    admission = SchedulingAdmission(feature_gate_enabled=True, provider="kubernetes")
    rules = [err.rule for err in validate_create(body_obj, admission)]
    assert rules == ["scheduling-delegation-mode"]


def test_several_errors_aggregate_like_apimachinery() -> None:
    errors = validate_create(lws().replicas(-1).size(0).obj())
    assert aggregate_message(errors) == (
        "[spec.replicas: Invalid value: -1: replicas must be equal or greater than 0, "
        "spec.leaderWorkerTemplate.size: Invalid value: 0: size must be equal or greater than 1]"
    )


# --- v1.0 values every controller acts on: accepted (nothing is accepted and ignored) -------------

HASH, PARALLEL, DEFAULT = (
    c.GROUP_IDENTITY_HASH,
    c.POD_TERMINATION_POLICY_PARALLEL,
    c.POD_TERMINATION_POLICY_DEFAULT,
)
PTP = "podTerminationPolicy"
ACCEPTANCE = [
    pytest.param(Case(lws().spec_field("groupIdentity", HASH)), id="Hash is accepted"),
    pytest.param(
        Case(lws().spec_field("groupIdentity", HASH).max_group_restarts(2)),
        id="Hash with maxGroupRestarts is accepted",
    ),
    # Upstream's TestPodTerminationPolicyDefaultAndValidation rows.
    pytest.param(Case(lws().spec_field(PTP, DEFAULT)), id="validate create accepts Default"),
    pytest.param(Case(lws().spec_field(PTP, PARALLEL)), id="validate create accepts Parallel"),
    pytest.param(
        Case(
            lws().spec_field(PTP, "InvalidPolicy"),
            want_rules=("pod-termination-policy",),
            want_errors=(
                'spec.podTerminationPolicy: Unsupported value: "InvalidPolicy": '
                'supported values: "Default", "Parallel"',
            ),
        ),
        id="validate create rejects invalid policy",
    ),
    pytest.param(
        Case(lws().spec_field(PTP, PARALLEL), old=lws().spec_field(PTP, DEFAULT)),
        id="validate update allows Default to Parallel",
    ),
    pytest.param(
        Case(lws().spec_field(PTP, DEFAULT), old=lws().spec_field(PTP, PARALLEL)),
        id="validate update allows Parallel to Default",
    ),
    pytest.param(
        Case(
            lws().spec_field(PTP, "InvalidPolicy"),
            old=lws().spec_field(PTP, PARALLEL),
            want_rules=("pod-termination-policy",),
        ),
        id="validate update rejects invalid policy",
    ),
    pytest.param(
        Case(
            lws().spec_field("groupIdentity", HASH).replicas(3), old=lws().spec_field("groupIdentity", HASH)
        ),
        id="an existing Hash object stays updatable",
    ),
    pytest.param(Case(lws().spec_field("groupIdentity", c.GROUP_IDENTITY_ORDINAL)), id="Ordinal is accepted"),
]


@pytest.mark.parametrize("case", ACCEPTANCE)
def test_v1_values_are_accepted(case: Case) -> None:
    rules, messages = run(case)
    assert tuple(rules) == case.want_rules
    if case.want_errors:
        assert tuple(messages) == case.want_errors


def test_acceptance_case_count() -> None:
    assert len(ACCEPTANCE) == 10
