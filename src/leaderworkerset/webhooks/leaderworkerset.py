"""LeaderWorkerSet admission: defaulting, and validation on create and update.

Both work on the JSON object the API server sends. Validation returns apimachinery-style field
errors (path, rule, Go-rendered message); the admission layer aggregates them into the denial.
"""

import copy

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.gocompat.intstr import IntOrPercentError, scaled_value
from leaderworkerset.core.gocompat.strconv import go_mod
from leaderworkerset.core.lifecycle import backoffsource
from leaderworkerset.core.objects import MutableObj, spec_is_hash, spec_replicas, spec_size
from leaderworkerset.webhooks import fields as f
from leaderworkerset.webhooks.scheduling import SchedulingAdmission, validate_scheduling
from leaderworkerset.webhooks.setannotations import validate_set_annotations

FieldError = v.FieldError

MAX_REPLICAS = 1_000_000
MAX_INT32 = 2**31 - 1
SUBGROUP_SIZE_PATH = "spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize"  # capitalised, as upstream
ROLLING_PATH = "spec.rolloutStrategy.rollingUpdateConfiguration"
# Restart policies under which a group is ever recreated, so a restart budget means something.
_RECREATING_RESTART_POLICIES = (
    "",  # the CRD defaults an absent policy to RecreateGroupOnPodRestart before we see it
    c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART,
    c.RESTART_POLICY_RECREATE_GROUP_AFTER_START,
)


# ---- defaulting --------------------------------------------------------------------------------


def default_lws(lws: MutableObj) -> MutableObj:
    """Return a defaulted copy of `lws`; applying it twice changes nothing more."""
    result = copy.deepcopy(lws)
    spec = result.setdefault("spec", {})
    if not isinstance(spec, dict):
        return result
    template = spec.setdefault("leaderWorkerTemplate", {})
    if isinstance(template, dict):
        _default_template(template)
    _default_rollout(spec)
    _default_network(spec)
    if not f.present(spec, "replicas"):
        spec["replicas"] = 1
    if not spec.get("groupIdentity"):
        spec["groupIdentity"] = c.GROUP_IDENTITY_ORDINAL
    if not spec.get("groupReplacementPolicy"):
        spec["groupReplacementPolicy"] = c.GROUP_REPLACEMENT_POST_TERMINATION
    if not spec.get("podTerminationPolicy"):
        spec["podTerminationPolicy"] = c.POD_TERMINATION_POLICY_DEFAULT
    return result


def _default_template(template: MutableObj) -> None:
    if not template.get("restartPolicy"):
        template["restartPolicy"] = c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART
    if template["restartPolicy"] == c.RESTART_POLICY_DEPRECATED_DEFAULT:
        template["restartPolicy"] = c.RESTART_POLICY_NONE
    if not f.present(template, "size"):
        template["size"] = 1
    backoffsource.default_field(template)


def _default_rollout(spec: MutableObj) -> None:
    strategy = spec.get("rolloutStrategy")
    if not isinstance(strategy, dict):
        strategy = {}
        spec["rolloutStrategy"] = strategy
    if not strategy.get("type"):
        strategy["type"] = c.ROLLOUT_STRATEGY_ROLLING_UPDATE
    if strategy["type"] == c.ROLLOUT_STRATEGY_ROLLING_UPDATE and not f.present(
        strategy, "rollingUpdateConfiguration"
    ):
        strategy["rollingUpdateConfiguration"] = {"partition": 0, "maxUnavailable": 1, "maxSurge": 0}


def _default_network(spec: MutableObj) -> None:
    network = spec.get("networkConfig")
    if not isinstance(network, dict):
        spec["networkConfig"] = {"subdomainPolicy": c.SUBDOMAIN_SHARED}
    elif not f.present(network, "subdomainPolicy"):
        network["subdomainPolicy"] = c.SUBDOMAIN_SHARED


# ---- validation --------------------------------------------------------------------------------


def validate_create(lws: MutableObj, scheduling: SchedulingAdmission | None = None) -> list[FieldError]:
    return _general(lws) + validate_scheduling(None, lws, scheduling or SchedulingAdmission())


def validate_update(
    old: MutableObj,
    new: MutableObj,
    scheduling: SchedulingAdmission | None = None,
) -> list[FieldError]:
    # podTerminationPolicy may change between valid values: upstream's update test allows it
    # (its docs call it immutable; the webhook is what users meet, so we follow the webhook).
    errors = _general(new)
    errors += _subgroup_update(
        f.child(old, "spec", "leaderWorkerTemplate"), f.child(new, "spec", "leaderWorkerTemplate")
    )
    errors += _subdomain_update(f.child(old, "spec"), f.child(new, "spec"))
    errors += _group_identity_update(f.child(old, "spec"), f.child(new, "spec"))
    errors += validate_scheduling(old, new, scheduling or SchedulingAdmission())
    return errors


def _general(lws: MutableObj) -> list[FieldError]:
    spec = f.child(lws, "spec")
    errors = v.validate_object_meta_names(f.child(lws, "metadata"), "metadata", "metadata")
    errors += _replicas_and_size(spec)
    errors += validate_rolling_update(spec, "spec", spec_replicas(spec))
    errors += _subgroup_policy(lws)
    errors += validate_group_identity(spec, "spec")
    errors += validate_max_group_restarts(spec, "spec")
    errors += validate_restart_backoff(spec, "spec")
    errors += _pod_termination_policy(spec)
    # this project's own annotations, opt-in (api/extensions.py, core/setannotations.py's table)
    errors += validate_set_annotations(lws, c.LWS_KIND)
    return errors


def _pod_termination_policy(spec: MutableObj) -> list[FieldError]:
    policy = f.string(spec, "podTerminationPolicy")
    if policy and policy not in c.POD_TERMINATION_POLICIES:
        supported = list(c.POD_TERMINATION_POLICIES)
        return [
            v.not_supported(
                "spec.podTerminationPolicy", v.go_quote(policy), supported, "pod-termination-policy"
            )
        ]
    return []


def _replicas_and_size(spec: MutableObj) -> list[FieldError]:
    errors: list[FieldError] = []
    replicas = f.opt_int(spec, "replicas")
    size = f.opt_int(f.child(spec, "leaderWorkerTemplate"), "size")
    if replicas is not None and replicas < 0:
        errors.append(
            v.invalid(
                "spec.replicas",
                v.go_int(replicas),
                "replicas must be equal or greater than 0",
                "replicas-min",
            )
        )
    if replicas is not None and replicas > MAX_REPLICAS:
        errors.append(
            v.invalid(
                "spec.replicas",
                v.go_int(replicas),
                "replicas must be equal or less than 1000000",
                "replicas-max",
            )
        )
    if size is not None and size < 1:
        errors.append(
            v.invalid(
                "spec.leaderWorkerTemplate.size",
                v.go_int(size),
                "size must be equal or greater than 1",
                "size-min",
            )
        )
    if spec_replicas(spec) * spec_size(spec) > MAX_INT32:
        detail = f"the product of replicas and worker replicas must not exceed {MAX_INT32}"
        errors.append(v.invalid("spec.replicas", v.go_int(replicas), detail, "replicas-size-product"))
    return errors


def validate_rolling_update(spec: MutableObj, spec_path: str, replicas: int) -> list[FieldError]:
    """maxUnavailable/maxSurge/partition rules; nothing to check without a configuration."""
    strategy = f.child(spec, "rolloutStrategy")
    if not f.present(strategy, "rollingUpdateConfiguration"):
        return []
    config = f.child(strategy, "rollingUpdateConfiguration")
    path = f"{spec_path}.rolloutStrategy.rollingUpdateConfiguration"
    errors: list[FieldError] = []
    for name in ("maxUnavailable", "maxSurge"):
        value = f.int_or_string(config, name)
        errors += v.validate_positive_int_or_percent(value, f"{path}.{name}", f"{name}-format")
        errors += v.validate_not_more_than_100_percent(value, f"{path}.{name}", f"{name}-percent-max")
    partition = f.opt_int(config, "partition") or 0
    errors += v.validate_nonnegative(partition, f"{path}.partition", "partition-min")
    errors += validate_surge_and_unavailable(config, path, replicas)
    return errors


def validate_surge_and_unavailable(config: MutableObj, path: str, replicas: int) -> list[FieldError]:
    """Both scaled to 0 (unavailable rounds down, surge up) would stall every rollout."""
    errors: list[FieldError] = []
    scaled: dict[str, int] = {}
    for name, round_up in (("maxUnavailable", False), ("maxSurge", True)):
        value = f.int_or_string(config, name)
        try:
            scaled[name] = scaled_value(value, replicas, round_up)
        except IntOrPercentError:
            scaled[name] = 0
            errors.append(
                v.invalid(f"{path}.{name}", v.go_int_or_string(value), "invalid value", f"{name}-scale")
            )
    if scaled["maxUnavailable"] == 0 and scaled["maxSurge"] == 0 and replicas != 0:
        value = v.go_int_or_string(f.int_or_string(config, "maxUnavailable"))
        detail = "must not be 0 when `maxSurge` is 0"
        errors.append(v.invalid(f"{path}.maxUnavailable", value, detail, "surge-and-unavailable-zero"))
    return errors


def _subgroup_policy(lws: MutableObj) -> list[FieldError]:
    spec = f.child(lws, "spec")
    template = f.child(spec, "leaderWorkerTemplate")
    if not f.present(template, "subGroupPolicy"):
        annotations = f.string_map(f.child(lws, "metadata"), "annotations")
        key = c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY
        if key not in annotations:
            return []
        detail = "cannot have subgroup-exclusive-topology without subGroupSize set"
        return [
            v.invalid(
                f"metadata.annotations.{key}",
                v.go_quote(annotations[key]),
                detail,
                "subgroup-exclusive-needs-subgroup",
            )
        ]
    policy = f.child(template, "subGroupPolicy")
    subgroup_size = f.opt_int(policy, "subGroupSize")
    if subgroup_size is None:
        return [
            v.required(
                SUBGROUP_SIZE_PATH,
                "subGroupSize is required when subGroupPolicy is set",
                "subgroup-size-required",
            )
        ]
    value = v.go_int(subgroup_size)
    if subgroup_size < 1:
        return [
            v.invalid(
                SUBGROUP_SIZE_PATH, value, "subGroupSize must be equal or greater than 1", "subgroup-size-min"
            )
        ]
    size = spec_size(spec)
    errors: list[FieldError] = []
    if go_mod(size, subgroup_size) != 0 and go_mod(size - 1, subgroup_size) != 0:
        detail = "size or size - 1 must be divisible by subGroupSize"
        errors.append(v.invalid(SUBGROUP_SIZE_PATH, value, detail, "subgroup-size-divides"))
    if size < subgroup_size:
        errors.append(
            v.invalid(
                SUBGROUP_SIZE_PATH, value, "subGroupSize cannot be larger than size", "subgroup-size-max"
            )
        )
    if (
        f.string(policy, "subGroupPolicyType") == c.SUBGROUP_POLICY_LEADER_EXCLUDED
        and go_mod(size - 1, subgroup_size) != 0
    ):
        detail = "size-1 must be divisible by subGroupSize when using LeaderExcluded"
        errors.append(v.invalid(SUBGROUP_SIZE_PATH, value, detail, "subgroup-leader-excluded-divides"))
    return errors


def validate_group_identity(spec: MutableObj, spec_path: str) -> list[FieldError]:
    """Hash groups are Deployment-managed: no per-group PVCs, no partition; Immediate needs Hash."""
    errors: list[FieldError] = []
    template = f.child(spec, "leaderWorkerTemplate")
    if spec_is_hash(spec):
        if f.items(template, "volumeClaimTemplates"):
            path = f"{spec_path}.leaderWorkerTemplate.volumeClaimTemplates"
            detail = "volumeClaimTemplates are not supported with groupIdentity Hash"
            errors.append(v.forbidden(path, detail, "hash-no-volume-claim-templates"))
        config = f.child(spec, "rolloutStrategy", "rollingUpdateConfiguration")
        partition = f.opt_int(config, "partition")
        if partition:
            path = f"{spec_path}.rolloutStrategy.rollingUpdateConfiguration.partition"
            detail = "partition is not supported with groupIdentity Hash"
            errors.append(v.invalid(path, v.go_int(partition), detail, "hash-no-partition"))
    elif f.string(spec, "groupReplacementPolicy") == c.GROUP_REPLACEMENT_IMMEDIATE:
        path = f"{spec_path}.groupReplacementPolicy"
        detail = "Immediate is only supported with groupIdentity Hash"
        errors.append(
            v.invalid(path, v.go_quote(c.GROUP_REPLACEMENT_IMMEDIATE), detail, "immediate-needs-hash")
        )
    return errors


def validate_max_group_restarts(spec: MutableObj, spec_path: str) -> list[FieldError]:
    """A restart budget only applies to restart policies that recreate the group."""
    template = f.child(spec, "leaderWorkerTemplate")
    budget = f.opt_int(template, "maxGroupRestarts")
    if budget is None or f.string(template, "restartPolicy") in _RECREATING_RESTART_POLICIES:
        return []
    path = f"{spec_path}.leaderWorkerTemplate.maxGroupRestarts"
    detail = "maxGroupRestarts is only supported when restartPolicy recreates the group"
    return [v.invalid(path, v.go_int(budget), detail, "max-group-restarts-policy")]


def validate_restart_backoff(spec: MutableObj, spec_path: str) -> list[FieldError]:
    """`leaderWorkerTemplate.restartBackoff`'s rules (core/lifecycle/backoffsource.py): a rule of
    the whole field is Forbidden at the field, a member's value Invalid at the member."""
    errors = []
    for problem in backoffsource.field_problems(spec):
        path, rule = problem.path(spec_path), f"restart-backoff-{problem.rule}"
        if problem.value is None:
            errors.append(v.forbidden(path, problem.detail, rule))
        else:
            errors.append(v.invalid(path, v.go_int(problem.value), problem.detail, rule))
    return errors


def _subgroup_update(old_template: MutableObj, new_template: MutableObj) -> list[FieldError]:
    old_on, new_on = f.present(old_template, "subGroupPolicy"), f.present(new_template, "subGroupPolicy")
    old_size = f.opt_int(f.child(old_template, "subGroupPolicy"), "subGroupSize")
    new_size = f.opt_int(f.child(new_template, "subGroupPolicy"), "subGroupSize")
    if old_on and new_on:
        # A legacy object stored without a size may gain one; the general rules reject a lost size.
        if old_size is not None and new_size is not None and old_size != new_size:
            return [v.immutable(SUBGROUP_SIZE_PATH, v.go_int(new_size), "subgroup-size-immutable")]
        return []
    if new_on:
        detail = "cannot enable subGroupSize after the lws is already created"
        return [v.invalid(SUBGROUP_SIZE_PATH, v.go_int(new_size), detail, "subgroup-policy-add")]
    if old_on:
        detail = "cannot remove subGroupSize after enabled"
        return [v.invalid(SUBGROUP_SIZE_PATH, v.go_int(old_size), detail, "subgroup-policy-remove")]
    return []


def _subdomain_update(old_spec: MutableObj, new_spec: MutableObj) -> list[FieldError]:
    if not f.present(new_spec, "networkConfig") or f.present(
        f.child(new_spec, "networkConfig"), "subdomainPolicy"
    ):
        return []
    old_policy = f.opt_string(f.child(old_spec, "networkConfig"), "subdomainPolicy")
    path = "spec.networkConfig.subdomainPolicy"
    return [
        v.invalid(
            path, v.go_string(old_policy), "cannot set subdomainPolicy as null", "subdomain-policy-null"
        )
    ]


def normalized_group_identity(spec: MutableObj) -> str:
    """ "" and Ordinal are the same identity scheme."""
    return f.string(spec, "groupIdentity") or c.GROUP_IDENTITY_ORDINAL


def _group_identity_update(old_spec: MutableObj, new_spec: MutableObj) -> list[FieldError]:
    if normalized_group_identity(old_spec) == normalized_group_identity(new_spec):
        return []
    value = v.go_quote(f.string(new_spec, "groupIdentity"))
    return [v.immutable("spec.groupIdentity", value, "group-identity-immutable")]
