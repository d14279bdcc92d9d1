"""What the rollout planner (`rollout.decide_rollout`) reads, built from cached objects."""

from collections.abc import Iterable, Mapping

from leaderworkerset.api import upstreammain as um
from leaderworkerset.core.disaggregated.children import initial_replicas, is_external, status_count
from leaderworkerset.core.disaggregated.naming import revision_of, role_of
from leaderworkerset.core.disaggregated.rollout import ChildView, RoleTarget
from leaderworkerset.core.objects import Obj, is_deleting, lws_replicas, metadata, name_of


def child_view(lws: Obj) -> ChildView:
    return ChildView(
        name=name_of(lws),
        role=role_of(lws),
        revision=revision_of(lws),
        spec_replicas=lws_replicas(lws),
        status_replicas=status_count(lws, "replicas"),
        ready_replicas=status_count(lws, "readyReplicas"),
        initial_replicas=initial_replicas(lws),
        created=str(metadata(lws).get("creationTimestamp") or ""),
        terminating=is_deleting(lws),
    )


def role_targets(ds: Obj, targets: Mapping[str, int]) -> list[RoleTarget]:
    """The spec roles with their resolved per-slice targets and rolling-update knobs."""
    result = []
    for role in (ds.get("spec") or {}).get("roles") or []:
        name = str(role.get("name"))
        config = ((role.get("spec") or {}).get("rolloutStrategy") or {}).get("rollingUpdateConfiguration")
        result.append(
            RoleTarget(
                name=name,
                desired=targets[name],
                max_surge=None if config is None else config.get("maxSurge"),
                max_unavailable=None if config is None else config.get("maxUnavailable"),
                has_rolling_update_config=config is not None,
                external=is_external(role),
            )
        )
    return result


def during_rollout_policy(ds: Obj) -> str:
    """`spec.scalingPolicy.duringRollout`; absent and `{}` are `RolloutCoupled`, v1.0's rollout."""
    policy = (ds.get("spec") or {}).get("scalingPolicy") or {}
    return str(policy.get("duringRollout") or um.SCALING_ROLLOUT_COUPLED)


def scales_during_rollout(ds: Obj) -> bool:
    """`AdvanceRollout`: a new target applies mid-rollout (planner.py)."""
    return during_rollout_policy(ds) == um.SCALING_ADVANCE_ROLLOUT


def child_views(children: Iterable[Obj]) -> list[ChildView]:
    return [child_view(lws) for lws in children]
