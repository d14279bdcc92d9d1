"""DisaggregatedSet validation: the same checks on create and update, plus warnings.

There is no DisaggregatedSet mutating webhook and no DisaggregatedSetRoleScaler webhook: roles are
defaulted by the CRD schema and scalers are only written by the controller and autoscalers.
"""

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.objects import MutableObj, spec_is_hash
from leaderworkerset.webhooks import fields as f
from leaderworkerset.webhooks.leaderworkerset import (
    validate_group_identity,
    validate_max_group_restarts,
    validate_restart_backoff,
    validate_surge_and_unavailable,
)
from leaderworkerset.webhooks.setannotations import validate_set_annotations

FieldError = v.FieldError

DNS1035_MAX_LENGTH = 63
MAX_SCALER_NAME_LENGTH = 253
REVISION_LENGTH = 8  # hex characters of the DS revision in child names
NAME_SEPARATORS = 3  # the dashes in <ds>-<slice>-<revision>-<role>
STATEFULSET_REVISION_SUFFIX_LENGTH = 11  # "-<10 chars>" of the controller-revision-hash label
# Hash roles: a size-1 group is only its leader, whose hostname is `<lws>-<8 key chars>`; larger
# groups also get a worker StatefulSet named after the Deployment pod `<lws>-<10>-<5>` whose pods
# carry the StatefulSet revision label.
HASH_LEADER_HOSTNAME_SUFFIX_LENGTH = 9
HASH_WORKER_SUFFIX_LENGTH = 17 + STATEFULSET_REVISION_SUFFIX_LENGTH
_EXCLUSIVE_ANNOTATIONS = (c.ANNOTATION_EXCLUSIVE_TOPOLOGY, c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY)


def validate(ds: MutableObj) -> tuple[list[str], list[FieldError]]:
    """Warnings and field errors for a DisaggregatedSet (create and update alike)."""
    warnings, errors = _validate_roles(ds)
    errors += _validate_generated_names(ds)
    errors += _validate_placement(ds)
    errors += validate_set_annotations(ds, c.DS_KIND)  # this project's own, opt-in
    return warnings, errors


def _roles(ds: MutableObj) -> list[MutableObj]:
    return f.items(f.child(ds, "spec"), "roles")


def _is_external(role: MutableObj) -> bool:
    return f.string(f.child(role, "scaling"), "mode") == c.ROLE_SCALING_EXTERNAL


def _byte_len(text: str) -> int:
    return len(text.encode())


def _validate_roles(ds: MutableObj) -> tuple[list[str], list[FieldError]]:
    warnings: list[str] = []
    errors: list[FieldError] = []
    ds_name = f.string(f.child(ds, "metadata"), "name")
    for i, role in enumerate(_roles(ds)):
        path = f"spec.roles[{i}]"
        spec = f.child(role, "spec")
        errors += _validate_role_rollout(spec, f"{path}.spec")
        errors += validate_max_group_restarts(spec, f"{path}.spec")
        # Not checked by upstream's DS webhook; refused here rather than by the child LWS's webhook,
        # which would leave the role without its LeaderWorkerSet.
        errors += validate_restart_backoff(spec, f"{path}.spec")
        errors += validate_group_identity(spec, f"{path}.spec")
        if not _is_external(role):
            continue
        role_name = f.string(role, "name")
        scaler_name = f"{ds_name}-{role_name}"
        if _byte_len(scaler_name) > MAX_SCALER_NAME_LENGTH:
            detail = f"would produce scaler name {v.go_quote(scaler_name)} exceeding 253 characters"
            errors.append(v.invalid(f"{path}.name", v.go_quote(role_name), detail, "ds-scaler-name-length"))
        replicas = f.opt_int(spec, "replicas")
        if replicas is not None and replicas > 1:
            warnings.append(
                f"role {v.go_quote(role_name)} sets scaling.mode: External and spec.replicas: {replicas}"
                f" — spec.replicas is ignored; drive replicas via DisaggregatedSetRoleScaler"
                f" {v.go_quote(scaler_name)} instead"
            )
    slices = f.opt_int(f.child(ds, "spec"), "slices")
    if any(_is_external(role) for role in _roles(ds)) and slices is not None and slices > 1:
        detail = (
            "spec.slices > 1 is not supported while any role has scaling.mode: External (alpha restriction)"
        )
        errors.append(v.forbidden("spec.slices", detail, "ds-external-single-slice"))
    return warnings, errors


def _validate_role_rollout(spec: MutableObj, spec_path: str) -> list[FieldError]:
    """Only RollingUpdate, no partition (the DS drives rollouts), surge/unavailable not both 0."""
    strategy = f.child(spec, "rolloutStrategy")
    path = f"{spec_path}.rolloutStrategy"
    errors: list[FieldError] = []
    strategy_type = f.string(strategy, "type")
    if strategy_type not in ("", c.ROLLOUT_STRATEGY_ROLLING_UPDATE):
        supported = [c.ROLLOUT_STRATEGY_ROLLING_UPDATE, ""]
        errors.append(
            v.not_supported(f"{path}.type", v.go_quote(strategy_type), supported, "ds-rollout-type")
        )
    if not f.present(strategy, "rollingUpdateConfiguration"):
        return errors
    config = f.child(strategy, "rollingUpdateConfiguration")
    config_path = f"{path}.rollingUpdateConfiguration"
    if f.opt_int(config, "partition"):
        detail = (
            "partition is not supported by DisaggregatedSet; "
            "rolling updates are managed across roles by the DisaggregatedSet controller"
        )
        errors.append(v.forbidden(f"{config_path}.partition", detail, "ds-no-partition"))
    return errors + _validate_role_surge(config, config_path, f.opt_int(spec, "replicas"))


def _validate_role_surge(config: MutableObj, path: str, replicas: int | None) -> list[FieldError]:
    # Roles with no replicas are exempt: an all-zero DisaggregatedSet is legitimate.
    if not replicas:
        return []
    errors: list[FieldError] = []
    for name in ("maxUnavailable", "maxSurge"):
        value = f.int_or_string(config, name)
        errors += v.validate_positive_int_or_percent(value, f"{path}.{name}", f"{name}-format")
        errors += v.validate_not_more_than_100_percent(value, f"{path}.{name}", f"{name}-percent-max")
    if errors:
        return errors
    return validate_surge_and_unavailable(config, path, replicas)


def hash_name_suffix_len(spec: MutableObj) -> int:
    """Longest name suffix a Hash role's LWS name gets (leader hostname or worker STS revision label)."""
    size = f.opt_int(f.child(spec, "leaderWorkerTemplate"), "size")
    if size is None or size <= 1:
        return HASH_LEADER_HOSTNAME_SUFFIX_LENGTH
    return HASH_WORKER_SUFFIX_LENGTH


def _name_suffix_len(spec: MutableObj) -> int:
    if spec_is_hash(spec):
        return hash_name_suffix_len(spec)
    replicas = f.opt_int(spec, "replicas")
    group_index_digits = len(str(replicas - 1)) if replicas is not None and replicas > 0 else 1
    # Worker pods carry `controller-revision-hash: <lws>-<groupIndex>-<10 chars>`.
    return 1 + group_index_digits + STATEFULSET_REVISION_SUFFIX_LENGTH


def _validate_generated_names(ds: MutableObj) -> list[FieldError]:
    slices = f.opt_int(f.child(ds, "spec"), "slices")
    slice_digits = len(str((1 if slices is None else slices) - 1))
    ds_name_len = _byte_len(f.string(f.child(ds, "metadata"), "name"))
    errors: list[FieldError] = []
    for i, role in enumerate(_roles(ds)):
        role_name = f.string(role, "name")
        suffix = _name_suffix_len(f.child(role, "spec"))
        fixed = NAME_SEPARATORS + slice_digits + REVISION_LENGTH + suffix
        total = ds_name_len + _byte_len(role_name) + fixed
        if total > DNS1035_MAX_LENGTH:
            detail = (
                f"the generated names ({total} chars) would exceed the DNS-1035 limit of {DNS1035_MAX_LENGTH}"
                " characters (accounting for StatefulSet revision hash labels); reduce the DisaggregatedSet"
                f" name and/or role name (combined limit: {DNS1035_MAX_LENGTH - fixed} characters)"
            )
            errors.append(
                v.invalid(f"spec.roles[{i}].name", v.go_quote(role_name), detail, "ds-generated-name-length")
            )
    return errors


def _validate_placement(ds: MutableObj) -> list[FieldError]:
    spec = f.child(ds, "spec")
    policy = f.child(spec, "placementPolicy")
    policy_type = f.string(policy, "type")
    if not f.present(spec, "placementPolicy") or policy_type in ("", c.PLACEMENT_NONE):
        return []
    errors: list[FieldError] = []
    if not f.string(policy, "topology"):
        detail = "topology is required when type is not None"
        errors.append(v.required("spec.placementPolicy.topology", detail, "ds-placement-topology"))
    for i, role in enumerate(_roles(ds)):
        key = _role_exclusive_annotation(role)
        if key is not None:
            detail = (
                f"the {v.go_quote(key)} annotation must not be combined with a non-None"
                f" spec.placementPolicy.type ({policy_type})"
            )
            errors.append(v.forbidden(f"spec.roles[{i}]", detail, "ds-placement-exclusive-conflict"))
    return errors


def _role_exclusive_annotation(role: MutableObj) -> str | None:
    """The first LWS exclusive-placement annotation on the role's metadata or pod templates."""
    template = f.child(role, "spec", "leaderWorkerTemplate")
    holders = [f.child(role, "metadata")]
    if f.present(template, "leaderTemplate"):
        holders.append(f.child(template, "leaderTemplate", "metadata"))
    holders.append(f.child(template, "workerTemplate", "metadata"))
    for key in _EXCLUSIVE_ANNOTATIONS:
        if any(key in f.string_map(holder, "annotations") for holder in holders):
            return key
    return None
