"""The DisaggregatedSet controller against a real API server.

The test plays the LWS controller (child status); everything else is the real controller.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, DS_ROLE_SCALERS, LEADERWORKERSETS, SERVICES
from tests.integration.disaggregatedset.helpers import (
    DS,
    create,
    ds_events,
    expect_children,
    expect_ds_condition,
    expect_ds_event,
    live_children,
    play_lws,
    revision_of,
    roll_role_image,
    set_child_status,
    update_spec,
)
from tests.support.builders import DisaggregatedSetBuilder, ServiceBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

Obj = dict[str, Any]
NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"


def two_roles(ns: str) -> DisaggregatedSetBuilder:
    return DisaggregatedSetBuilder(ns).role("prefill", 2, size=2).role("decode", 1)


async def test_children_carry_upstreams_names_labels_owner_env_and_annotations(
    api: KubeClient, ns: str
) -> None:
    body = two_roles(ns).role_metadata("prefill", {"team": "a"}, {"note": "kept"}).obj()
    ds = await create(api, body)
    rev = revision_of(ds)
    got = await expect_children(api, ns, {f"{DS}-0-{rev}-prefill": 2, f"{DS}-0-{rev}-decode": 1})
    prefill = got[f"{DS}-0-{rev}-prefill"]
    meta = prefill["metadata"]
    assert meta["labels"] == {
        "team": "a",
        c.LABEL_APP: f"{DS}-0-prefill",
        c.LABEL_DS_NAME: DS,
        c.LABEL_DS_ROLE: "prefill",
        c.LABEL_DS_SLICE: "0",
        c.LABEL_DS_REVISION: rev,
    }
    assert meta["annotations"] == {"note": "kept", c.ANNOTATION_DS_INITIAL_REPLICAS: "2"}
    [owner] = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        c.DS_KIND,
        DS,
        ds["metadata"]["uid"],
        True,
    )
    assert "blockOwnerDeletion" not in owner
    worker = prefill["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert worker["metadata"]["labels"][c.LABEL_DS_REVISION] == rev
    env = {e["name"]: e["value"] for e in worker["spec"]["containers"][0]["env"]}
    assert env == {
        c.ENV_DISAGGREGATEDSET_NAME: DS,
        c.ENV_DISAGGREGATEDSET_ROLE: "prefill",
        c.ENV_DISAGGREGATEDSET_SLICE: "0",
        c.ENV_DISAGGREGATEDSET_REVISION: rev,
    }
    assert prefill["spec"]["leaderWorkerTemplate"]["size"] == 2
    progressing = await expect_ds_condition(api, ns, c.CONDITION_PROGRESSING, c.REASON_ROLLOUT_IN_PROGRESS)
    assert progressing["message"] == c.MESSAGE_ROLLOUT_IN_PROGRESS


async def test_ready_children_make_it_available_with_role_statuses_and_private_services(
    api: KubeClient, ns: str
) -> None:
    ds = await create(api, two_roles(ns).obj())
    rev = revision_of(ds)
    prefill, decode = f"{DS}-0-{rev}-prefill", f"{DS}-0-{rev}-decode"
    await expect_children(api, ns, {prefill: 2, decode: 1})
    await set_child_status(api, ns, prefill, 2, 1, 2)

    async def prefill_seen() -> bool:  # the controller has processed the status we wrote
        statuses = ((await api.get(DISAGGREGATEDSETS, ns, DS)).get("status") or {}).get("roleStatuses") or []
        assert statuses[:1] == [{"name": "prefill", "replicas": 2, "readyReplicas": 1, "updatedReplicas": 2}]
        return True

    await eventually(prefill_seen)
    await expect_ds_condition(api, ns, c.CONDITION_PROGRESSING, c.REASON_ROLLOUT_IN_PROGRESS)
    # Not every role serves yet: no private Service.
    await consistently(lambda: _no_services(api, ns), duration=1.0)
    await set_child_status(api, ns, prefill, 2, 2, 2)
    await set_child_status(api, ns, decode, 1, 1, 1)
    available = await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
    assert available["message"] == c.MESSAGE_ALL_ROLES_READY
    stored = await api.get(DISAGGREGATEDSETS, ns, DS)
    assert stored["status"]["observedGeneration"] == stored["metadata"]["generation"]
    assert stored["status"]["roleStatuses"] == [
        {"name": "prefill", "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
        {"name": "decode", "replicas": 1, "readyReplicas": 1, "updatedReplicas": 1},
    ]
    progressing = next(x for x in stored["status"]["conditions"] if x["type"] == c.CONDITION_PROGRESSING)
    assert (progressing["status"], progressing["reason"]) == (c.CONDITION_FALSE, c.REASON_ALL_ROLES_READY)
    lws = (await live_children(api, ns))[decode]

    async def services() -> Obj:
        service = await api.get_or_none(SERVICES, ns, decode + "-prv")
        assert service is not None, "no private service for decode"
        return service

    service = await eventually(services)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {
        c.LABEL_DS_NAME: DS,
        c.LABEL_DS_ROLE: "decode",
        c.LABEL_DS_REVISION: rev,
        c.LABEL_DS_SLICE: "0",
    }
    [owner] = service["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (c.LWS_KIND, lws["metadata"]["uid"], True)
    assert await api.get_or_none(SERVICES, ns, prefill + "-prv") is not None


async def _no_services(api: KubeClient, ns: str) -> bool:
    listed = await api.list(SERVICES, ns, label_selector=c.LABEL_DS_NAME)
    assert listed == [], f"unexpected services {[s['metadata']['name'] for s in listed]}"
    return True


async def _two_roles_running(api: KubeClient, ns: str) -> tuple[str, str]:
    """A two-role set whose children exist: its revision and the prefill child's name."""
    ds = await create(api, two_roles(ns).obj())
    rev = revision_of(ds)
    prefill = f"{DS}-0-{rev}-prefill"
    await expect_children(api, ns, {prefill: 2, f"{DS}-0-{rev}-decode": 1})
    return rev, prefill


async def test_replica_change_scales_in_place_without_a_new_revision(api: KubeClient, ns: str) -> None:
    rev, prefill = await _two_roles_running(api, ns)
    updated = await update_spec(api, ns, lambda spec: spec["roles"][0]["spec"].update(replicas=4))
    assert revision_of(updated) == rev
    got = await expect_children(api, ns, {prefill: 4, f"{DS}-0-{rev}-decode": 1})
    assert got[prefill]["metadata"]["annotations"][c.ANNOTATION_DS_INITIAL_REPLICAS] == "4"
    assert await ds_events(api, ns, c.EVENT_ROLLING_UPDATE_STARTED) == []


async def test_group_replacement_policy_is_live_synced_and_startup_policy_is_not(
    api: KubeClient, ns: str
) -> None:
    rev, prefill = await _two_roles_running(api, ns)

    def change(spec: Obj) -> None:
        spec["roles"][0]["spec"]["groupReplacementPolicy"] = c.GROUP_REPLACEMENT_IMMEDIATE
        spec["roles"][0]["spec"]["startupPolicy"] = c.STARTUP_POLICY_LEADER_READY

    await update_spec(api, ns, change)

    async def synced() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, prefill)
        assert lws["spec"].get("groupReplacementPolicy") == c.GROUP_REPLACEMENT_IMMEDIATE
        return True

    await eventually(synced)
    lws = await api.get(LEADERWORKERSETS, ns, prefill)
    assert lws["spec"].get("startupPolicy") != c.STARTUP_POLICY_LEADER_READY  # takes effect next rollout
    assert set(await live_children(api, ns)) == {prefill, f"{DS}-0-{rev}-decode"}


async def test_restart_backoff_reaches_the_current_children_without_a_new_revision(
    api: KubeClient, ns: str
) -> None:
    rev, prefill = await _two_roles_running(api, ns)
    backoff = {"baseSeconds": 5, "capSeconds": 60}

    def change(spec: Obj) -> None:
        spec["roles"][0]["spec"]["leaderWorkerTemplate"]["restartBackoff"] = backoff

    updated = await update_spec(api, ns, change)
    assert revision_of(updated) == rev

    async def synced() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, prefill)
        assert lws["spec"]["leaderWorkerTemplate"].get("restartBackoff") == backoff
        return True

    await eventually(synced)
    assert set(await live_children(api, ns)) == {prefill, f"{DS}-0-{rev}-decode"}
    assert await ds_events(api, ns, c.EVENT_ROLLING_UPDATE_STARTED) == []


async def test_slices_are_full_copies_and_removed_slices_are_deleted(api: KubeClient, ns: str) -> None:
    ds = await create(api, two_roles(ns).slices(2).obj())
    rev = revision_of(ds)
    names = {f"{DS}-{s}-{rev}-{role}": n for s in (0, 1) for role, n in (("prefill", 2), ("decode", 1))}
    got = await expect_children(api, ns, names)
    assert got[f"{DS}-1-{rev}-decode"]["metadata"]["labels"][c.LABEL_DS_SLICE] == "1"
    for name, replicas in names.items():
        await set_child_status(api, ns, name, replicas, replicas, replicas)
    await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
    stored = await api.get(DISAGGREGATEDSETS, ns, DS)
    assert stored["status"]["roleStatuses"][0] == {
        "name": "prefill",
        "replicas": 4,
        "readyReplicas": 4,
        "updatedReplicas": 4,
    }
    await update_spec(api, ns, lambda spec: spec.update(slices=1))
    await expect_children(api, ns, {k: v for k, v in names.items() if f"{DS}-0-" in k})
    await expect_ds_event(
        api, ns, c.EVENT_LWS_DELETED, f"Deleted LWS {DS}-1-{rev}-decode for removed slice 1"
    )


async def test_rolling_update_of_one_role_replaces_every_child_and_deletes_the_old(
    api: KubeClient, ns: str
) -> None:
    ds = await create(api, two_roles(ns).obj())
    old = revision_of(ds)
    async with play_lws(api, ns):
        await expect_children(api, ns, {f"{DS}-0-{old}-prefill": 2, f"{DS}-0-{old}-decode": 1})
        await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
        new = await roll_role_image(api, ns, 0, NEW_IMAGE, old)
        await expect_children(
            api,
            ns,
            {f"{DS}-0-{new}-prefill": 2, f"{DS}-0-{new}-decode": 1},
        )
        await expect_ds_event(
            api, ns, c.EVENT_ROLLING_UPDATE_COMPLETED, f"Completed rolling update to revision {new}"
        )
        await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
    assert f"Deleted drained LWS {DS}-0-{old}-prefill" in await ds_events(api, ns, c.EVENT_LWS_DELETED)
    ups = await ds_events(api, ns, c.EVENT_SCALING_UP)
    assert f"Scaling up prefill LWS {DS}-0-{new}-prefill from 0 to 1 replicas" in ups
    downs = await ds_events(api, ns, c.EVENT_SCALING_DOWN)
    assert any(note.startswith(f"Scaling down decode LWS {DS}-0-{old}-decode") for note in downs)


async def test_a_foreign_lws_holding_a_child_name_is_not_adopted(api: KubeClient, ns: str) -> None:
    body = two_roles(ns).obj()
    # The revision is computed over the defaulted roles: create once to learn the name, then clash.
    probe = await create(api, {**body, "metadata": {**body["metadata"], "name": "probe"}})
    await api.delete(DISAGGREGATEDSETS, ns, "probe")
    rev = revision_of(probe)
    foreign = {
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "metadata": {"name": f"{DS}-0-{rev}-decode", "namespace": ns, "labels": {"owner": "someone-else"}},
        "spec": {
            "replicas": 3,
            "leaderWorkerTemplate": {
                "size": 1,
                "workerTemplate": probe["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["workerTemplate"],
            },
        },
    }
    await api.create(LEADERWORKERSETS, foreign)
    await create(api, body)
    await expect_children(api, ns, {f"{DS}-0-{rev}-prefill": 2})

    async def untouched() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, foreign["metadata"]["name"])
        assert lws["spec"]["replicas"] == 3
        assert not lws["metadata"].get("ownerReferences")
        return True

    await consistently(untouched, duration=1.5)
    await expect_ds_condition(api, ns, c.CONDITION_PROGRESSING, c.REASON_ROLLOUT_IN_PROGRESS)


# ----- role scalers ---------------------------------------------------------------------------
def external(ns: str) -> DisaggregatedSetBuilder:
    return DisaggregatedSetBuilder(ns).role("prefill", 1).role("decode", None).external("decode")


async def expect_scaler(api: KubeClient, ns: str, name: str) -> Obj:
    async def check() -> Obj:
        scaler = await api.get_or_none(DS_ROLE_SCALERS, ns, name)
        assert scaler is not None, f"no scaler {name}"
        assert (scaler.get("status") or {}).get("conditions"), "scaler status not written"
        return scaler

    return await eventually(check)


async def test_external_role_gets_a_seeded_bound_scaler_that_drives_replicas(
    api: KubeClient, ns: str
) -> None:
    ds = await create(api, external(ns).obj())
    rev = revision_of(ds)
    decode = f"{DS}-0-{rev}-decode"
    scaler = await expect_scaler(api, ns, f"{DS}-decode")
    assert scaler["spec"] == {"replicas": 1}
    assert scaler["metadata"]["labels"] == {c.LABEL_DS_NAME: DS, c.LABEL_DS_ROLE: "decode"}
    [owner] = scaler["metadata"]["ownerReferences"]
    assert (owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == (
        ds["metadata"]["uid"],
        True,
        True,
    )
    [ready] = scaler["status"]["conditions"]
    assert (ready["type"], ready["status"], ready["reason"], ready["message"]) == (
        c.CONDITION_READY,
        c.CONDITION_TRUE,
        c.REASON_BOUND,
        c.MESSAGE_BOUND,
    )
    assert scaler["status"]["selector"] == (
        f"{c.LABEL_DS_NAME}={DS},{c.LABEL_DS_ROLE}=decode,{c.LABEL_WORKER_INDEX}=0"
    )
    await expect_ds_event(api, ns, c.EVENT_SCALER_CREATED, f"Created scaler {DS}-decode for role decode")
    await expect_children(api, ns, {f"{DS}-0-{rev}-prefill": 1, decode: 1})
    # An autoscaler writes the /scale subresource.
    await api.merge_patch(DS_ROLE_SCALERS, ns, f"{DS}-decode", {"spec": {"replicas": 3}}, subresource="scale")
    await expect_children(api, ns, {f"{DS}-0-{rev}-prefill": 1, decode: 3})
    await set_child_status(api, ns, decode, 3, 2, 3)

    async def observed() -> bool:
        scale = await api.get(DS_ROLE_SCALERS, ns, f"{DS}-decode/scale")
        assert scale["status"].get("replicas") == 3, scale
        assert scale["status"]["selector"].startswith(c.LABEL_DS_NAME)
        return True

    await eventually(observed)


async def test_kubectl_scale_dsrs_reaches_the_child(api: KubeClient, ns: str, apiserver_cluster: Any) -> None:
    ds = await create(api, external(ns).obj())
    rev = revision_of(ds)
    await expect_scaler(api, ns, f"{DS}-decode")
    proc = await asyncio.create_subprocess_exec(
        str(apiserver_cluster.kubectl),
        "--kubeconfig",
        str(apiserver_cluster.kubeconfig),
        "-n",
        ns,
        "scale",
        f"dsrs/{DS}-decode",
        "--replicas=2",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out.decode()
    await expect_children(api, ns, {f"{DS}-0-{rev}-prefill": 1, f"{DS}-0-{rev}-decode": 2})


async def test_a_scaler_left_by_a_deleted_set_of_the_same_name_is_adopted_with_its_replicas(
    api: KubeClient, ns: str
) -> None:
    # Upstream's e2e hpa_test.go, "kubectl scale on the scaler propagates spec.replicas to the LWS":
    # the previous test's DS of the same name was deleted (its LWS too, but not its scaler), so the
    # scaler `<ds>-prefill` found by name is the old one until the garbage collector (absent here)
    # removes it, and the /scale write lands on it.
    body = DisaggregatedSetBuilder(ns).role("prefill", 0).role("decode", 1).external("prefill").obj()
    await create(api, body)
    old = await expect_scaler(api, ns, f"{DS}-prefill")
    await api.delete(DISAGGREGATEDSETS, ns, DS)
    for lws in (await live_children(api, ns)).values():
        await api.delete(LEADERWORKERSETS, ns, lws["metadata"]["name"])
    ds = await create(api, body)
    rev = revision_of(ds)
    await api.merge_patch(
        DS_ROLE_SCALERS, ns, f"{DS}-prefill", {"spec": {"replicas": 3}}, subresource="scale"
    )
    async with play_lws(api, ns):
        await expect_children(api, ns, {f"{DS}-0-{rev}-prefill": 3, f"{DS}-0-{rev}-decode": 1})
        await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
    statuses = (await api.get(DISAGGREGATEDSETS, ns, DS))["status"]["roleStatuses"]
    assert [(s["name"], s["replicas"]) for s in statuses] == [("prefill", 3), ("decode", 1)]
    scaler = await api.get(DS_ROLE_SCALERS, ns, f"{DS}-prefill")
    assert scaler["metadata"]["uid"] == old["metadata"]["uid"], "adopted in place, not recreated"
    [owner] = scaler["metadata"]["ownerReferences"]
    assert (owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == (
        ds["metadata"]["uid"],
        True,
        True,
    )
    assert scaler["spec"] == {"replicas": 3}
    assert await ds_events(api, ns, c.EVENT_SCALER_CONFLICT) == []


async def test_switching_back_to_static_deletes_the_scaler(api: KubeClient, ns: str) -> None:
    await create(api, external(ns).obj())
    await expect_scaler(api, ns, f"{DS}-decode")
    await update_spec(api, ns, lambda spec: spec["roles"][1].pop("scaling"))

    async def gone() -> bool:
        assert await api.get_or_none(DS_ROLE_SCALERS, ns, f"{DS}-decode") is None
        return True

    await eventually(gone)
    await expect_ds_event(
        api, ns, c.EVENT_SCALER_DELETED, f"Deleted scaler {DS}-decode (role decode is no longer External)"
    )


async def test_a_foreign_scaler_is_not_adopted_and_the_set_waits(api: KubeClient, ns: str) -> None:
    squatter = {
        "apiVersion": c.DS_API_VERSION,
        "kind": c.DSRS_KIND,
        "metadata": {"name": f"{DS}-decode", "namespace": ns},
        "spec": {"replicas": 7},
    }
    await api.create(DS_ROLE_SCALERS, squatter)
    await create(api, external(ns).obj())
    unresolved = await expect_ds_condition(
        api, ns, c.CONDITION_PROGRESSING, c.REASON_REPLICA_TARGETS_UNRESOLVED
    )
    assert unresolved["message"] == c.MESSAGE_REPLICA_TARGETS_UNRESOLVED_PREFIX + "decode"
    await expect_ds_event(
        api,
        ns,
        c.EVENT_SCALER_CONFLICT,
        f"Scaler {DS}-decode exists but is not controlled by this DisaggregatedSet; not adopting",
    )
    assert await live_children(api, ns) == {}  # no child is written while a target is unknown


async def test_an_autoscaler_mid_rollout_moves_only_the_new_target(api: KubeClient, ns: str) -> None:
    ds = await create(api, external(ns).obj())
    old = revision_of(ds)
    await expect_scaler(api, ns, f"{DS}-decode")
    await api.merge_patch(DS_ROLE_SCALERS, ns, f"{DS}-decode", {"spec": {"replicas": 2}}, subresource="scale")
    await expect_children(api, ns, {f"{DS}-0-{old}-prefill": 1, f"{DS}-0-{old}-decode": 2})
    await set_child_status(api, ns, f"{DS}-0-{old}-prefill", 1, 1, 1)
    await set_child_status(api, ns, f"{DS}-0-{old}-decode", 2, 2, 2)

    def new_images(spec: Obj) -> None:
        for role in spec["roles"]:
            role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = (
                NEW_IMAGE
            )

    new = revision_of(await update_spec(api, ns, new_images))
    new_decode = f"{DS}-0-{new}-decode"
    # The first step surges one new group per role; nothing new becomes Ready, so the rollout holds.
    await expect_children(
        api,
        ns,
        {f"{DS}-0-{old}-prefill": 1, f"{DS}-0-{old}-decode": 2, f"{DS}-0-{new}-prefill": 1, new_decode: 1},
    )
    await api.merge_patch(DS_ROLE_SCALERS, ns, f"{DS}-decode", {"spec": {"replicas": 0}}, subresource="scale")

    async def target_followed() -> bool:  # the controller saw the autoscaler's 0 ...
        lws = await api.get(LEADERWORKERSETS, ns, new_decode)
        assert lws["metadata"]["annotations"][c.ANNOTATION_DS_INITIAL_REPLICAS] == "0"
        return True

    await eventually(target_followed)

    async def old_frozen_new_kept() -> bool:
        # The old baseline is frozen at 2 (the drain still knows what it has to replace), and the
        # new revision's group is not taken away while the rollout runs.
        kids = await live_children(api, ns)
        old_decode = kids[f"{DS}-0-{old}-decode"]
        assert old_decode["metadata"]["annotations"][c.ANNOTATION_DS_INITIAL_REPLICAS] == "2"
        assert kids[new_decode]["spec"]["replicas"] == 1
        return True

    await consistently(old_frozen_new_kept, duration=1.5)


async def test_a_removed_role_drains_with_the_others_and_leaves_the_status(api: KubeClient, ns: str) -> None:
    ds = await create(
        api, DisaggregatedSetBuilder(ns).role("prefill", 2).role("decode", 1).role("encode", 1).obj()
    )
    old = revision_of(ds)
    async with play_lws(api, ns):
        await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
        new = revision_of(await update_spec(api, ns, lambda spec: spec["roles"].pop()))
        await expect_children(api, ns, {f"{DS}-0-{new}-prefill": 2, f"{DS}-0-{new}-decode": 1})
        await expect_ds_event(api, ns, c.EVENT_LWS_DELETED, f"Deleted drained LWS {DS}-0-{old}-encode")
        await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
    statuses = (await api.get(DISAGGREGATEDSETS, ns, DS))["status"]["roleStatuses"]
    assert [s["name"] for s in statuses] == ["prefill", "decode"]


async def test_an_old_child_without_its_baseline_gets_it_back_with_a_warning(
    api: KubeClient, ns: str
) -> None:
    ds = await create(api, two_roles(ns).obj())
    old = revision_of(ds)
    old_decode = f"{DS}-0-{old}-decode"
    await expect_children(api, ns, {f"{DS}-0-{old}-prefill": 2, old_decode: 1})
    await set_child_status(api, ns, f"{DS}-0-{old}-prefill", 2, 2, 2)
    await set_child_status(api, ns, old_decode, 1, 1, 1)
    new = revision_of(
        await update_spec(
            api,
            ns,
            lambda spec: spec["roles"][1]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"][
                "containers"
            ][0].update(image=NEW_IMAGE),
        )
    )
    # The new children never become Ready here, so the rollout holds after its first step.
    await expect_ds_event(
        api, ns, c.EVENT_ROLLING_UPDATE_STARTED, f"Started rolling update to revision {new}"
    )
    patch = {"metadata": {"annotations": {c.ANNOTATION_DS_INITIAL_REPLICAS: None}}}
    await api.merge_patch(LEADERWORKERSETS, ns, old_decode, patch)
    note = (
        f"LWS {old_decode} has no valid {c.ANNOTATION_DS_INITIAL_REPLICAS} annotation;"
        " restoring it from current spec.replicas (1)"
    )
    await expect_ds_event(api, ns, c.EVENT_INITIAL_REPLICAS_MISSING, note)

    async def restored() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, old_decode)
        assert lws["metadata"]["annotations"].get(c.ANNOTATION_DS_INITIAL_REPLICAS) == "1"
        return True

    await eventually(restored)


async def test_an_older_controllers_ds_owned_service_is_handed_to_its_lws(api: KubeClient, ns: str) -> None:
    ds = await create(api, two_roles(ns).obj())
    rev = revision_of(ds)
    decode = f"{DS}-0-{rev}-decode"
    legacy = (
        ServiceBuilder(decode + "-prv", ns)
        .labels({c.LABEL_DS_NAME: DS, c.LABEL_DS_ROLE: "decode", c.LABEL_DS_REVISION: rev})
        .controlled_by(c.DS_API_VERSION, c.DS_KIND, DS, ds["metadata"]["uid"])
        .headless({c.LABEL_DS_NAME: DS, c.LABEL_DS_ROLE: "decode"})
        .obj()
    )
    created = await api.create(SERVICES, legacy)
    lws = (await expect_children(api, ns, {f"{DS}-0-{rev}-prefill": 2, decode: 1}))[decode]

    async def handed_over() -> bool:
        service = await api.get(SERVICES, ns, decode + "-prv")
        [owner] = service["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == (c.LWS_KIND, lws["metadata"]["uid"]), owner
        assert service["metadata"]["uid"] == created["metadata"]["uid"], "migrated in place, not recreated"
        return True

    await eventually(handed_over)


async def test_the_manager_can_tell_whether_the_ds_api_is_served(api: KubeClient, ns: str) -> None:
    from leaderworkerset.controllers.disaggregatedset.setup import require_ds_api

    await require_ds_api(api)  # the CRDs are installed: no error
    assert await api.serves(c.DS_API_VERSION, c.DSRS_PLURAL)
    assert not await api.serves(c.DS_API_VERSION, "widgets")
    assert not await api.serves("example.com/v1", "widgets")
