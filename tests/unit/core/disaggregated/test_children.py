"""Child LeaderWorkerSets: building, listing, targets, steady state."""

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated import children as ch
from leaderworkerset.core.disaggregated.current import (
    CreateChild,
    ScaleChild,
    SetInitialReplicas,
    SyncGroupReplacementPolicy,
    SyncRestartBackoff,
    plan_current_revision,
)
from tests.support.builders import DisaggregatedSetBuilder
from tests.unit.core.disaggregated.helpers import DS_UID, NS, child

REV = "aaaaaaaa"


def ds_builder() -> DisaggregatedSetBuilder:
    return DisaggregatedSetBuilder(NS).uid(DS_UID).role("prefill", 2, size=2).role("decode", 1)


def test_build_child_metadata_owner_and_annotations() -> None:
    ds = ds_builder().role_metadata("prefill", {"team": "a", "app": "mine"}, {"note": "x"}).obj()
    got = ch.build_child(ds, ds["spec"]["roles"][0], 1, REV, replicas=0, initial=2)
    assert got["metadata"] == {
        "name": f"test-ds-1-{REV}-prefill",
        "namespace": NS,
        "labels": {
            "team": "a",
            "app": "test-ds-1-prefill",  # the controller's label wins over the user's
            c.LABEL_DS_ROLE: "prefill",
            c.LABEL_DS_SLICE: "1",
            c.LABEL_DS_NAME: "test-ds",
            c.LABEL_DS_REVISION: REV,
        },
        "annotations": {"note": "x", c.ANNOTATION_DS_INITIAL_REPLICAS: "2"},
        "ownerReferences": [
            {
                "apiVersion": c.DS_API_VERSION,
                "kind": c.DS_KIND,
                "name": "test-ds",
                "uid": DS_UID,
                "controller": True,
            }
        ],
    }
    assert got["spec"]["replicas"] == 0
    assert got["spec"]["leaderWorkerTemplate"]["size"] == 2


@pytest.mark.parametrize(
    "with_leader", [pytest.param(False, id="worker only"), pytest.param(True, id="leader too")]
)
def test_build_child_templates_get_labels_env_and_placement(with_leader: bool) -> None:
    builder = ds_builder().placement(c.PLACEMENT_EXCLUSIVE_SLICE, "zone").slices(2)
    if with_leader:
        builder = builder.leader_template("prefill")
    ds = builder.obj()
    role = ds["spec"]["roles"][0]
    role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["env"] = [
        {"name": "KEEP", "value": "1"},
        {"name": c.ENV_DISAGGREGATEDSET_ROLE, "value": "user-said"},
    ]
    got = ch.build_child(ds, role, 1, REV, replicas=2, initial=2)
    lwt = got["spec"]["leaderWorkerTemplate"]
    templates = [lwt["workerTemplate"]] + ([lwt["leaderTemplate"]] if with_leader else [])
    assert ("leaderTemplate" in lwt) == with_leader
    for template in templates:
        labels = template["metadata"]["labels"]
        assert labels[c.LABEL_DS_SLICE] == "1"
        assert labels[c.LABEL_APP] == "test-ds-1-prefill"
        assert labels["component"].startswith("prefill")
        env = template["spec"]["containers"][0]["env"]
        tail = [
            {"name": c.ENV_DISAGGREGATEDSET_NAME, "value": "test-ds"},
            {"name": c.ENV_DISAGGREGATEDSET_ROLE, "value": "prefill"},
            {"name": c.ENV_DISAGGREGATEDSET_SLICE, "value": "1"},
            {"name": c.ENV_DISAGGREGATEDSET_REVISION, "value": REV},
        ]
        assert env[-4:] == tail
        assert sum(e["name"] == c.ENV_DISAGGREGATEDSET_ROLE for e in env) == 1
        terms = template["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms[-1]["topologyKey"] == "zone"
    # The role itself is untouched (the DS spec is shared by every child).
    assert "affinity" not in role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("3", 3, id="decimal"),
        pytest.param("0", 0, id="zero"),
        pytest.param("+4", 4, id="signed as ParseInt allows"),
        pytest.param(None, None, id="missing"),
        pytest.param("", None, id="empty"),
        pytest.param("x", None, id="not an int"),
        pytest.param("-1", None, id="negative is unset (v1.0)"),
        pytest.param("2147483648", None, id="overflows int32"),
    ],
)
def test_initial_replicas(value: str | None, want: int | None) -> None:
    assert ch.initial_replicas(child("prefill", initial=value)) == want


def test_owned_children_apply_the_listing_rules() -> None:
    ds = ds_builder().obj()
    mine = child("prefill")
    foreign = child("decode", owner_uid="other-uid")
    legacy = child("decode", revision="bbbbbbbb")
    del legacy["metadata"]["labels"][c.LABEL_DS_SLICE]
    other_set = child("decode", ds="other-ds")
    assert ch.owned_children(ds, [mine, foreign, legacy, other_set]) == [mine]


def test_terminating_children_do_not_count_as_old() -> None:
    live, dying, target = child("a", revision="old1"), child("b", revision="old1", deleting=True), child("a")
    assert ch.old_children([live, dying, target], REV) == [live]
    assert ch.target_children([live, dying, target], REV) == [target]


@pytest.mark.parametrize(
    ("scaler_replicas", "want"),
    [
        pytest.param(None, {"prefill": 2}, id="External without scaler: unresolved"),
        pytest.param(5, {"prefill": 2, "decode": 5}, id="External with scaler"),
        pytest.param(0, {"prefill": 2, "decode": 0}, id="scaler at zero"),
    ],
)
def test_resolve_targets(scaler_replicas: int | None, want: dict[str, int]) -> None:
    ds = ds_builder().external("decode").obj()
    scalers = {} if scaler_replicas is None else {"decode": {"spec": {"replicas": scaler_replicas}}}
    assert ch.resolve_targets(ds, scalers) == want
    assert ch.unresolved_roles(["prefill", "decode"], want) == ([] if "decode" in want else ["decode"])


def test_static_role_without_replicas_defaults_to_one() -> None:
    ds = DisaggregatedSetBuilder(NS).role("a", None).role("b", 3).obj()
    assert ch.resolve_targets(ds, {}) == {"a": 1, "b": 3}


def _existing(role: str, **kw: Any) -> dict[str, Any]:
    return child(role, revision=REV, **kw)


@pytest.mark.parametrize(
    ("children", "grp", "want"),
    [
        pytest.param([], None, [CreateChild("prefill", 2, 2), CreateChild("decode", 1, 1)], id="fresh slice"),
        pytest.param(
            [_existing("prefill", spec=2, initial="2"), _existing("decode", spec=1, initial="1")],
            None,
            [],
            id="converged: nothing to do",
        ),
        pytest.param(
            [_existing("prefill", spec=1, initial="1"), _existing("decode", spec=1, initial="1")],
            None,
            [
                SetInitialReplicas(f"test-ds-0-{REV}-prefill", 2),
                ScaleChild(f"test-ds-0-{REV}-prefill", "prefill", 1, 2),
            ],
            id="replicas change: initial first, then scale",
        ),
        pytest.param(
            [_existing("prefill", spec=2), _existing("decode", spec=None, initial="1")],
            None,
            [SetInitialReplicas(f"test-ds-0-{REV}-prefill", 2)],
            id="missing annotation restored; nil spec.replicas is 1",
        ),
        pytest.param(
            [_existing("prefill", spec=2, initial="2"), _existing("decode", spec=1, initial="1")],
            c.GROUP_REPLACEMENT_IMMEDIATE,
            [SyncGroupReplacementPolicy(f"test-ds-0-{REV}-prefill", c.GROUP_REPLACEMENT_IMMEDIATE)],
            id="groupReplacementPolicy live-synced",
        ),
        pytest.param(
            [_existing("prefill", spec=2, initial="2"), _existing("decode", spec=1, initial="1")],
            c.GROUP_REPLACEMENT_POST_TERMINATION,
            [],
            id="explicit default equals unset",
        ),
    ],
)
def test_plan_current_revision(children: list[dict[str, Any]], grp: str | None, want: list[object]) -> None:
    builder = ds_builder()
    if grp is not None:
        builder = builder.group_replacement_policy("prefill", grp)
    ds = builder.obj()
    targets = ch.resolve_targets(ds, {})
    assert plan_current_revision(ds, 0, REV, targets, children) == want


@pytest.mark.parametrize(
    ("role_backoff", "child_backoff", "want"),
    [
        pytest.param(None, None, None, id="neither"),
        pytest.param(
            {"baseSeconds": 5}, None, {"baseSeconds": 5, "capSeconds": 300}, id="added: written out"
        ),
        pytest.param(
            {"baseSeconds": 5},
            {"baseSeconds": 5, "capSeconds": 300},
            None,
            id="the child's defaults are no change",
        ),
        pytest.param({}, {"baseSeconds": 10, "capSeconds": 300}, None, id="empty {} is the defaults"),
        pytest.param(
            {"baseSeconds": 5, "capSeconds": 60},
            {"baseSeconds": 10, "capSeconds": 300},
            {"baseSeconds": 5, "capSeconds": 60},
            id="changed",
        ),
        pytest.param(None, {"baseSeconds": 10, "capSeconds": 300}, "remove", id="removed"),
    ],
)
def test_restart_backoff_is_live_synced_to_the_current_children(
    role_backoff: dict[str, int] | None,
    child_backoff: dict[str, int] | None,
    want: dict[str, int] | str | None,
) -> None:
    ds = ds_builder().obj()
    if role_backoff is not None:
        ds["spec"]["roles"][0]["spec"]["leaderWorkerTemplate"]["restartBackoff"] = role_backoff
    prefill, decode = _existing("prefill", spec=2, initial="2"), _existing("decode", spec=1, initial="1")
    if child_backoff is not None:
        prefill["spec"]["leaderWorkerTemplate"] = {"restartBackoff": child_backoff}
    plan = plan_current_revision(ds, 0, REV, ch.resolve_targets(ds, {}), [prefill, decode])
    name = f"test-ds-0-{REV}-prefill"
    expected = [SyncRestartBackoff(name, want if isinstance(want, dict) else None)] if want else []
    assert plan == expected


def test_role_targets_carry_budgets_and_the_external_flag_for_the_planner() -> None:
    from leaderworkerset.core.disaggregated.rollout import RoleTarget
    from leaderworkerset.core.disaggregated.rollout_inputs import role_targets

    ds = ds_builder().external("decode").role_rollout("prefill", "50%", 1).obj()
    assert role_targets(ds, {"prefill": 2, "decode": 5}) == [
        RoleTarget("prefill", 2, max_surge="50%", max_unavailable=1, has_rolling_update_config=True),
        RoleTarget("decode", 5, external=True),
    ]


def test_child_view_reads_the_cached_object() -> None:
    from leaderworkerset.core.disaggregated.rollout import ChildView
    from leaderworkerset.core.disaggregated.rollout_inputs import child_view

    lws = child("decode", spec=None, status=2, ready=1, initial="3", deleting=True)
    lws["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    assert child_view(lws) == ChildView(
        name=f"test-ds-0-{REV}-decode",
        role="decode",
        revision=REV,
        spec_replicas=1,
        status_replicas=2,
        ready_replicas=1,
        initial_replicas=3,
        created="2026-01-01T00:00:00Z",
        terminating=True,
    )
