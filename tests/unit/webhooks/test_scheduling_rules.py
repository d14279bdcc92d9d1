"""Every `spec.scheduling` admission rule by id, with its exact text.

The last test reads the rule ids out of the webhook sources, so a rule added without a row here
fails the suite.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.webhooks import scheduling as webhook_scheduling
from leaderworkerset.webhooks.leaderworkerset import validate_create, validate_update
from leaderworkerset.webhooks.scheduling import SchedulingAdmission
from tests.support.builders import LeaderWorkerSetBuilder, lws

Obj = dict[str, Any]
K8S = SchedulingAdmission(feature_gate_enabled=True, provider=c.SCHEDULER_PROVIDER_KUBERNETES)
VOLCANO = SchedulingAdmission(feature_gate_enabled=True, provider=c.SCHEDULER_PROVIDER_VOLCANO)


def sched(scheduling: Obj, builder: LeaderWorkerSetBuilder | None = None) -> LeaderWorkerSetBuilder:
    return (builder or lws()).spec_field("scheduling", scheduling)


def with_templates(
    builder: LeaderWorkerSetBuilder, change: Callable[[Obj, Obj], None]
) -> LeaderWorkerSetBuilder:
    lwt = builder.spec["leaderWorkerTemplate"]
    change(lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"])
    return builder


def owned(builder: LeaderWorkerSetBuilder) -> LeaderWorkerSetBuilder:
    return builder.controlled_by("example.com/v1", "Parent", "p", "u")


@dataclass(frozen=True)
class Rule:
    rule: str
    new: LeaderWorkerSetBuilder
    want: str  # the rendered error (field path, type, detail)
    old: LeaderWorkerSetBuilder | None = None
    admission: SchedulingAdmission = field(default_factory=lambda: K8S)


CLAIM = {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}
RULES = [
    Rule(
        "scheduling-add",
        sched({}),
        "spec.scheduling: Forbidden: cannot add spec.scheduling after creation",
        old=lws(),
    ),
    Rule(
        "scheduling-remove",
        lws(),
        "spec.scheduling: Forbidden: cannot remove spec.scheduling after creation",
        old=sched({}),
    ),
    Rule(
        "scheduling-feature-gate",
        sched({}),
        "spec.scheduling: Forbidden: requires the WorkloadAwareScheduling feature gate",
        admission=SchedulingAdmission(provider=c.SCHEDULER_PROVIDER_KUBERNETES),
    ),
    Rule(
        "scheduling-provider",
        sched({}),
        "spec.scheduling: Forbidden: requires a configured scheduler provider",
        admission=SchedulingAdmission(feature_gate_enabled=True),
    ),
    Rule(
        "scheduling-provider-supported",
        sched({}),
        'spec.scheduling: Unsupported value: "yarn": supported values: "kubernetes", "volcano"',
        admission=SchedulingAdmission(feature_gate_enabled=True, provider="yarn"),
    ),
    Rule(
        "scheduling-workload-api",
        sched({}),
        "spec.scheduling: Forbidden: scheduling.k8s.io/v1beta1 Workload API is not available",
        admission=SchedulingAdmission(
            feature_gate_enabled=True, provider="kubernetes", workload_api_available=lambda: False
        ),
    ),
    Rule(
        "scheduling-one-level",
        sched({"schedulingPolicy": {"basic": {}}, "replica": {}}),
        "spec.scheduling: Invalid value: &v1.LeaderWorkerSetScheduling{...}: phase 1 requires exactly one "
        "active scheduling level, got [lws replica]",
    ),
    Rule(
        "scheduling-level-immutable",
        sched({"schedulingPolicy": {"basic": {}}}),
        "spec.scheduling: Forbidden: cannot switch the active scheduling level after creation",
        old=sched({}),
    ),
    Rule(
        "scheduling-priority-immutable",
        sched(
            {},
            with_templates(
                lws(),
                lambda leader, w: (
                    leader.update(priorityClassName="high"),
                    w.update(priorityClassName="high"),
                ),
            ),
        ),
        "spec.leaderWorkerTemplate: Forbidden: cannot change priorityClassName while workload-aware "
        "scheduling is configured",
        old=sched({}),
    ),
    Rule(
        "scheduling-immutable",
        sched({"replica": {"disruptionMode": {"all": {}}}}),
        "spec.scheduling.replica.disruptionMode: Invalid value: {...}: field is immutable",
        old=sched({"replica": {"disruptionMode": {"single": {}}}}),
    ),
    Rule(
        "scheduling-min-group-count",
        sched({"schedulingPolicy": {"gang": {"minGroupCount": 2}}}),
        "spec.scheduling.schedulingPolicy.gang.minGroupCount: Forbidden: minGroupCount requires "
        "CompositePodGroup support and is not available in phase 1",
    ),
    Rule(
        "scheduling-role-size",
        sched({"replica": {"leader": {}}}, lws().size(1)),
        "spec.leaderWorkerTemplate.size: Invalid value: 1: leader/worker scheduling requires size >= 2",
    ),
    Rule(
        "scheduling-leaf-min-count",
        sched({"replica": {"worker": {"schedulingPolicy": {"gang": {"minCount": 5}}}}}, lws().size(3)),
        "spec.scheduling.replica.worker.schedulingPolicy.gang.minCount: Invalid value: 5: "
        "must equal complete leaf membership 2",
    ),
    Rule(
        "scheduling-gang-leader-ready",
        sched({}, lws().spec_field("startupPolicy", c.STARTUP_POLICY_LEADER_READY)),
        "spec.scheduling: Forbidden: a gang containing the leader and workers is incompatible with "
        "startupPolicy LeaderReady",
    ),
    Rule(
        "scheduling-exclusive-topology",
        sched({}, lws().annotation(c.ANNOTATION_EXCLUSIVE_TOPOLOGY, "zone")),
        "spec.scheduling: Forbidden: gang scheduling or workload topology constraints cannot be combined "
        "with exclusive topology in alpha",
    ),
    Rule(
        "scheduling-same-priority",
        sched({}, with_templates(lws(), lambda leader, w: leader.update(priorityClassName="high"))),
        "spec.scheduling: Invalid value: null: all managed pod templates must use the same priorityClassName",
    ),
    Rule(
        "scheduling-no-scheduling-group",
        sched({}, with_templates(lws(), lambda leader, w: w.update(schedulingGroup={"podGroupName": "x"}))),
        "spec.scheduling: Forbidden: managed pod templates must not set spec.schedulingGroup",
    ),
    Rule(
        "scheduling-claim-referenced",
        sched(
            {"replica": {"resourceClaims": [CLAIM]}},
            with_templates(lws(), lambda leader, w: w.update(resourceClaims=[CLAIM])),
        ),
        'spec.scheduling.replica.resourceClaims[0]: Invalid value: "gpu": must have a matching reference '
        "in every member pod template",
    ),
    Rule(
        "scheduling-delegation-mode",
        sched(
            {"replica": {"leader": {}}},
            owned(lws().annotation(c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME, "t")),
        ),
        "spec.scheduling: Forbidden: delegated scheduling supports only whole-LWS or replica mode",
    ),
    Rule(
        "scheduling-delegation-immutable",
        sched({}, lws().annotation(c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME, "t")),
        "metadata.annotations[scheduling.k8s.io/group-template-name]: Forbidden: immutable once "
        "spec.scheduling is set",
        old=sched({}),
    ),
    Rule(
        "volcano-replica-only",
        sched({"schedulingPolicy": {"gang": {}}}),
        "spec.scheduling: Forbidden: the Volcano provider supports the typed API only at replica level",
        admission=VOLCANO,
    ),
    Rule(
        "volcano-no-basic",
        sched({"replica": {"schedulingPolicy": {"basic": {}}}}),
        "spec.scheduling.replica.schedulingPolicy: Forbidden: "
        "the Volcano provider does not support Basic policy",
        admission=VOLCANO,
    ),
    Rule(
        "volcano-no-constraints",
        sched({"replica": {"schedulingConstraints": {}}}),
        "spec.scheduling.replica.schedulingConstraints: Forbidden: "
        "the Volcano provider does not support typed scheduling constraints",
        admission=VOLCANO,
    ),
    Rule(
        "volcano-no-disruption-mode",
        sched({"replica": {"disruptionMode": {"single": {}}}}),
        "spec.scheduling.replica.disruptionMode: Forbidden: the Volcano provider does not support typed "
        "disruption mode",
        admission=VOLCANO,
    ),
    Rule(
        "volcano-no-claims",
        sched(
            {"replica": {"resourceClaims": [CLAIM]}},
            with_templates(
                lws(),
                lambda leader, w: (leader.update(resourceClaims=[CLAIM]), w.update(resourceClaims=[CLAIM])),
            ),
        ),
        "spec.scheduling.replica.resourceClaims: Forbidden: the Volcano provider does not support shared "
        "resource claims",
        admission=VOLCANO,
    ),
]


@pytest.mark.parametrize("case", [pytest.param(r, id=r.rule) for r in RULES])
def test_rule(case: Rule) -> None:
    new = case.new.obj()
    errors = (
        validate_create(new, case.admission)
        if case.old is None
        else validate_update(case.old.obj(), new, case.admission)
    )
    assert [(e.rule, e.error()) for e in errors] == [(case.rule, case.want)]


def test_the_kubernetes_provider_admits_a_plain_opt_in() -> None:
    """The positive side: the rules above fire on their trigger alone, not on every opt-in."""
    assert validate_create(sched({}).obj(), K8S) == []
    assert validate_create(sched({}).obj(), VOLCANO) == []


def hash_lws() -> LeaderWorkerSetBuilder:
    return lws().group_identity(c.GROUP_IDENTITY_HASH)


@dataclass(frozen=True)
class HashOptIn:
    scheduling: Obj
    admission: SchedulingAdmission
    want_rules: tuple[str, ...] = ()


HASH_OPT_INS = [
    pytest.param(HashOptIn({}, K8S), id="kubernetes, replica level (default)"),
    pytest.param(HashOptIn({"schedulingPolicy": {"gang": {}}}, K8S), id="kubernetes, whole set"),
    pytest.param(
        HashOptIn({"replica": {"leader": {"schedulingPolicy": {"basic": {}}}}}, K8S),
        id="kubernetes, leader and worker roles",
    ),
    pytest.param(HashOptIn({}, VOLCANO), id="volcano, replica level"),
    # Hash takes no exemption: the level's own rules still apply.
    pytest.param(
        HashOptIn({"replica": {"schedulingPolicy": {"basic": {}}}}, VOLCANO, ("volcano-no-basic",)),
        id="volcano still refuses Basic",
    ),
]


@pytest.mark.parametrize("case", HASH_OPT_INS)
def test_hash_identity_opts_in_like_ordinal(case: HashOptIn) -> None:
    """v1.0 accepts spec.scheduling with groupIdentity Hash (its PodGroups are made per group key)."""
    errors = validate_create(sched(case.scheduling, hash_lws()).obj(), case.admission)
    assert tuple(e.rule for e in errors) == case.want_rules
    ordinal = validate_create(sched(case.scheduling).obj(), case.admission)
    assert [e.rule for e in ordinal] == [e.rule for e in errors]


def test_hash_opt_in_cases_ran() -> None:
    assert len(HASH_OPT_INS) == 5


def test_every_rule_id_has_a_row() -> None:
    sources = [
        Path(webhook_scheduling.__file__),
        Path(webhook_scheduling.__file__).parents[1] / "core" / "scheduling" / "gang.py",
    ]
    literal_ids = {
        m for p in sources for m in re.findall(r'"((?:scheduling|volcano)-[a-z-]+)"', p.read_text())
    }
    rows = {r.rule for r in RULES}
    # add/remove are spelt f"scheduling-{verb}" in the source, so they are the only non-literal ids.
    assert rows - literal_ids == {"scheduling-add", "scheduling-remove"}
    assert literal_ids <= rows
    assert len(RULES) == len(rows) == 25
