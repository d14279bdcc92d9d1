"""Admission rules for `spec.scheduling`, workload-aware gang scheduling.

Phase 1 materialises exactly one level of the LeaderWorkerSet hierarchy as PodGroups: the whole
set (`lws`), each replica (`replica`, the default), or the leader and workers of each replica
(`role`). Level selection (`scheduling_mode`) lives in core so the controllers share it.
"""

from collections.abc import Callable
from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.objects import MutableObj, controller_owner
from leaderworkerset.core.scheduling import mode
from leaderworkerset.core.scheduling.gang import volcano_unsupported
from leaderworkerset.core.scheduling.mode import SchedulingModeError, scheduling_mode
from leaderworkerset.webhooks import fields as f

FieldError = v.FieldError
PATH = "spec.scheduling"
_LEVEL_FIELDS = mode.SCHEDULING_LEVEL_FIELDS
_DELEGATION_ANNOTATIONS = (
    c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME,
    c.ANNOTATION_SCHEDULING_PARENT_COMPOSITE_POD_GROUP,
)


@dataclass(frozen=True)
class SchedulingAdmission:
    """What the manager knows when admitting a newly opted-in object."""

    feature_gate_enabled: bool = False
    provider: str | None = None
    # A bool, or a probe asked at admission time (upstream asks its RESTMapper, so the answer
    # follows the API server's discovery rather than what was known at start-up).
    workload_api_available: bool | Callable[[], bool] = True

    def workload_api(self) -> bool:
        probe = self.workload_api_available
        return probe() if callable(probe) else probe


def validate_scheduling(
    old: MutableObj | None, new: MutableObj, admission: SchedulingAdmission
) -> list[FieldError]:
    new_spec, old_spec = f.child(new, "spec"), f.child(old, "spec")
    new_on = f.present(new_spec, "scheduling")
    old_on = old is not None and f.present(old_spec, "scheduling")
    if old is not None and old_on != new_on:
        verb = "add" if new_on else "remove"
        return [v.forbidden(PATH, f"cannot {verb} spec.scheduling after creation", f"scheduling-{verb}")]
    if not new_on:
        return []
    errors = [] if old_on else _opt_in(admission)
    if errors:
        return errors
    return _phase_one(old if old_on else None, new, admission)


def _opt_in(admission: SchedulingAdmission) -> list[FieldError]:
    """Prerequisites for newly opting in; existing configurations stay updatable without them."""
    if not admission.feature_gate_enabled:
        detail = f"requires the {c.FEATURE_WORKLOAD_AWARE_SCHEDULING} feature gate"
        return [v.forbidden(PATH, detail, "scheduling-feature-gate")]
    if not admission.provider:
        return [v.forbidden(PATH, "requires a configured scheduler provider", "scheduling-provider")]
    if admission.provider not in c.SCHEDULER_PROVIDERS:
        supported = sorted(c.SCHEDULER_PROVIDERS)
        return [
            v.not_supported(PATH, v.go_quote(admission.provider), supported, "scheduling-provider-supported")
        ]
    if admission.provider == c.SCHEDULER_PROVIDER_KUBERNETES and not admission.workload_api():
        detail = "scheduling.k8s.io/v1beta1 Workload API is not available"
        return [v.forbidden(PATH, detail, "scheduling-workload-api")]
    return []


def _phase_one(old: MutableObj | None, new: MutableObj, admission: SchedulingAdmission) -> list[FieldError]:
    spec = f.child(new, "spec")
    scheduling = f.child(spec, "scheduling")
    try:
        mode = scheduling_mode(scheduling)
    except SchedulingModeError as err:
        return [v.invalid(PATH, "&v1.LeaderWorkerSetScheduling{...}", str(err), "scheduling-one-level")]
    errors: list[FieldError] = []
    if old is not None:
        errors += _update_rules(f.child(old, "spec"), spec, mode)
    errors += _semantics(new, mode)
    if admission.provider == c.SCHEDULER_PROVIDER_VOLCANO:
        errors += _volcano(scheduling)
    errors += _delegation(old, new, mode)
    return errors


def _templates(spec: MutableObj) -> tuple[MutableObj, MutableObj]:
    """(leader template, worker template); the worker template stands in for a missing leader one."""
    template = f.child(spec, "leaderWorkerTemplate")
    worker = f.child(template, "workerTemplate")
    leader = f.child(template, "leaderTemplate") if f.present(template, "leaderTemplate") else worker
    return leader, worker


def _priority(spec: MutableObj) -> tuple[str, bool]:
    leader, worker = _templates(spec)
    leader_priority = f.string(f.child(leader, "spec"), "priorityClassName")
    worker_priority = f.string(f.child(worker, "spec"), "priorityClassName")
    return leader_priority, leader_priority == worker_priority


def _selected_level(scheduling: MutableObj, mode: str) -> list[tuple[str, MutableObj]]:
    if mode == c.SCHEDULING_MODE_LWS:
        return [(PATH, scheduling)]
    replica = f.child(scheduling, "replica")
    if mode == c.SCHEDULING_MODE_REPLICA:
        return [(f"{PATH}.replica", replica)]
    return [(f"{PATH}.replica.{role}", f.child(replica, role)) for role in ("leader", "worker")]


def _update_rules(old_spec: MutableObj, new_spec: MutableObj, mode: str) -> list[FieldError]:
    old_scheduling = f.child(old_spec, "scheduling")
    try:
        old_mode = scheduling_mode(old_scheduling)
    except SchedulingModeError:
        return []
    if old_mode != mode:
        detail = "cannot switch the active scheduling level after creation"
        return [v.forbidden(PATH, detail, "scheduling-level-immutable")]
    errors: list[FieldError] = []
    old_priority, old_consistent = _priority(old_spec)
    new_priority, new_consistent = _priority(new_spec)
    if old_consistent and new_consistent and old_priority != new_priority:
        detail = "cannot change priorityClassName while workload-aware scheduling is configured"
        errors.append(v.forbidden("spec.leaderWorkerTemplate", detail, "scheduling-priority-immutable"))
    old_levels = dict(_selected_level(old_scheduling, mode))
    for path, level in _selected_level(f.child(new_spec, "scheduling"), mode):
        for name in (*_LEVEL_FIELDS, "resourceClaims"):
            if level.get(name) != old_levels.get(path, {}).get(name):
                errors.append(
                    v.invalid(f"{path}.{name}", "{...}", "field is immutable", "scheduling-immutable")
                )
    return errors


def _is_composite_gang(policy: object, default_gang: bool) -> bool:
    if not isinstance(policy, dict) or (not f.present(policy, "basic") and not f.present(policy, "gang")):
        return default_gang
    return not f.present(policy, "basic") and f.present(policy, "gang")


def _is_leaf_gang(level: MutableObj) -> bool:
    policy = f.child(level, "schedulingPolicy")
    return not f.present(policy, "basic") and f.present(policy, "gang")


def _gang_contains_both_roles(scheduling: MutableObj, mode: str) -> bool:
    if mode == c.SCHEDULING_MODE_LWS:
        return _is_composite_gang(scheduling.get("schedulingPolicy"), False)
    if mode == c.SCHEDULING_MODE_REPLICA:
        return _is_composite_gang(f.child(scheduling, "replica").get("schedulingPolicy"), True)
    return False


def _gang_at_level(scheduling: MutableObj, mode: str) -> bool:
    if mode != c.SCHEDULING_MODE_ROLE:
        return _gang_contains_both_roles(scheduling, mode)
    replica = f.child(scheduling, "replica")
    return _is_leaf_gang(f.child(replica, "leader")) or _is_leaf_gang(f.child(replica, "worker"))


def _topology_at_level(scheduling: MutableObj, mode: str) -> bool:
    return any(
        f.items(f.child(level, "schedulingConstraints"), "topology")
        for _, level in _selected_level(scheduling, mode)
    )


def _semantics(lws: MutableObj, mode: str) -> list[FieldError]:
    spec = f.child(lws, "spec")
    scheduling = f.child(spec, "scheduling")
    size = f.opt_int(f.child(spec, "leaderWorkerTemplate"), "size")
    size = 1 if size is None else size
    errors = _min_counts(scheduling, mode, size)
    if (
        _gang_contains_both_roles(scheduling, mode)
        and f.string(spec, "startupPolicy") == c.STARTUP_POLICY_LEADER_READY
    ):
        detail = "a gang containing the leader and workers is incompatible with startupPolicy LeaderReady"
        errors.append(v.forbidden(PATH, detail, "scheduling-gang-leader-ready"))
    annotations = f.string_map(f.child(lws, "metadata"), "annotations")
    if annotations.get(c.ANNOTATION_EXCLUSIVE_TOPOLOGY) and (
        _gang_at_level(scheduling, mode) or _topology_at_level(scheduling, mode)
    ):
        detail = (
            "gang scheduling or workload topology constraints "
            "cannot be combined with exclusive topology in alpha"
        )
        errors.append(v.forbidden(PATH, detail, "scheduling-exclusive-topology"))
    errors += _template_rules(spec)
    errors += _claims(spec, scheduling, mode)
    return errors


def _min_counts(scheduling: MutableObj, mode: str, size: int) -> list[FieldError]:
    errors: list[FieldError] = []
    detail = "minGroupCount requires CompositePodGroup support and is not available in phase 1"
    if mode in (c.SCHEDULING_MODE_LWS, c.SCHEDULING_MODE_REPLICA):
        path, level = _selected_level(scheduling, mode)[0]
        if f.present(f.child(level, "schedulingPolicy", "gang"), "minGroupCount"):
            errors.append(
                v.forbidden(
                    f"{path}.schedulingPolicy.gang.minGroupCount", detail, "scheduling-min-group-count"
                )
            )
        return errors
    if size < 2:
        detail = "leader/worker scheduling requires size >= 2"
        errors.append(
            v.invalid("spec.leaderWorkerTemplate.size", v.go_int(size), detail, "scheduling-role-size")
        )
    for (path, level), expected in zip(_selected_level(scheduling, mode), (1, size - 1), strict=True):
        min_count = f.opt_int(f.child(level, "schedulingPolicy", "gang"), "minCount")
        if min_count is not None and min_count != expected:
            detail = f"must equal complete leaf membership {expected}"
            errors.append(
                v.invalid(
                    f"{path}.schedulingPolicy.gang.minCount",
                    v.go_int(min_count),
                    detail,
                    "scheduling-leaf-min-count",
                )
            )
    return errors


def _template_rules(spec: MutableObj) -> list[FieldError]:
    errors: list[FieldError] = []
    _, consistent = _priority(spec)
    if not consistent:
        detail = "all managed pod templates must use the same priorityClassName"
        errors.append(v.invalid(PATH, v.GO_NULL, detail, "scheduling-same-priority"))
    leader, worker = _templates(spec)
    if f.present(f.child(leader, "spec"), "schedulingGroup") or f.present(
        f.child(worker, "spec"), "schedulingGroup"
    ):
        detail = "managed pod templates must not set spec.schedulingGroup"
        errors.append(v.forbidden(PATH, detail, "scheduling-no-scheduling-group"))
    return errors


def _claims(spec: MutableObj, scheduling: MutableObj, mode: str) -> list[FieldError]:
    leader, worker = _templates(spec)
    members = {"leader": [leader], "worker": [worker]}
    errors: list[FieldError] = []
    for path, level in _selected_level(scheduling, mode):
        templates = members.get(path.rsplit(".", 1)[-1], [leader, worker])
        for i, claim in enumerate(f.items(level, "resourceClaims")):
            for template in templates:
                if not _claim_referenced(claim, template):
                    detail = "must have a matching reference in every member pod template"
                    name = v.go_quote(f.string(claim, "name"))
                    errors.append(
                        v.invalid(f"{path}.resourceClaims[{i}]", name, detail, "scheduling-claim-referenced")
                    )
    return errors


def _claim_referenced(claim: MutableObj, template: MutableObj) -> bool:
    for pod_claim in f.items(f.child(template, "spec"), "resourceClaims"):
        if all(
            pod_claim.get(k) == claim.get(k)
            for k in ("name", "resourceClaimName", "resourceClaimTemplateName")
        ):
            return True
    return False


def _volcano(scheduling: MutableObj) -> list[FieldError]:
    return [v.forbidden(u.path, u.message, u.rule) for u in volcano_unsupported(scheduling)]


def _has_controller(obj: MutableObj) -> bool:
    """Delegation (KEP-6089) only applies to an LWS controlled by a parent workload."""
    return controller_owner(obj) is not None


def _delegation(old: MutableObj | None, new: MutableObj, mode: str) -> list[FieldError]:
    annotations = f.string_map(f.child(new, "metadata"), "annotations")
    errors: list[FieldError] = []
    delegated = c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME in annotations and _has_controller(new)
    if delegated and mode == c.SCHEDULING_MODE_ROLE:
        detail = "delegated scheduling supports only whole-LWS or replica mode"
        errors.append(v.forbidden(PATH, detail, "scheduling-delegation-mode"))
    if old is None:
        return errors
    old_annotations = f.string_map(f.child(old, "metadata"), "annotations")
    for key in _DELEGATION_ANNOTATIONS:
        if old_annotations.get(key) != annotations.get(key):
            detail = "immutable once spec.scheduling is set"
            errors.append(
                v.forbidden(f"metadata.annotations[{key}]", detail, "scheduling-delegation-immutable")
            )
    return errors
