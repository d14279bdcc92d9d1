"""A DisaggregatedSet of one role (upstream main after v1.0 admits 1 to 10 roles).

The API server (our CRD) admits it; the real DS controller creates its one LeaderWorkerSet, makes it
Available, scales it in place and rolls it to a new revision. The test plays the LWS controller.
"""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS
from tests.integration.disaggregatedset.helpers import (
    DS,
    create,
    ds_events,
    expect_children,
    expect_ds_condition,
    expect_ds_event,
    play_lws,
    revision_of,
    roll_role_image,
    update_spec,
)
from tests.support.builders import DisaggregatedSetBuilder
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]

NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"


async def _role_statuses(api: KubeClient, ns: str) -> list[dict[str, object]]:
    stored = await api.get(DISAGGREGATEDSETS, ns, DS)
    statuses: list[dict[str, object]] = (stored.get("status") or {}).get("roleStatuses") or []
    return statuses


async def test_a_single_role_set_is_admitted_becomes_available_and_scales(api: KubeClient, ns: str) -> None:
    ds = await create(api, DisaggregatedSetBuilder(ns).role("serve", 2, size=2).obj())
    assert [role["name"] for role in ds["spec"]["roles"]] == ["serve"]
    rev = revision_of(ds)
    child = f"{DS}-0-{rev}-serve"
    got = await expect_children(api, ns, {child: 2})
    assert got[child]["metadata"]["annotations"][c.ANNOTATION_DS_INITIAL_REPLICAS] == "2"
    async with play_lws(api, ns):
        await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
        assert await _role_statuses(api, ns) == [
            {"name": "serve", "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}
        ]
        await update_spec(api, ns, lambda spec: spec["roles"][0]["spec"].update(replicas=3))
        await expect_children(api, ns, {child: 3})

        async def scaled() -> bool:
            statuses = await _role_statuses(api, ns)
            assert statuses == [{"name": "serve", "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3}]
            return True

        await eventually(scaled)
        await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
    assert await ds_events(api, ns, c.EVENT_ROLLING_UPDATE_STARTED) == []


async def test_a_single_role_set_rolls_to_a_new_revision(api: KubeClient, ns: str) -> None:
    ds = await create(api, DisaggregatedSetBuilder(ns).role("serve", 3).obj())
    old = revision_of(ds)
    async with play_lws(api, ns):
        await expect_children(api, ns, {f"{DS}-0-{old}-serve": 3})
        await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
        new = await roll_role_image(api, ns, 0, NEW_IMAGE, old)
        await expect_children(api, ns, {f"{DS}-0-{new}-serve": 3})
        await expect_ds_event(
            api, ns, c.EVENT_ROLLING_UPDATE_COMPLETED, f"Completed rolling update to revision {new}"
        )
        await expect_ds_condition(api, ns, c.CONDITION_AVAILABLE, c.REASON_ALL_ROLES_READY)
    # One role with the default budget (surge 1, unavailable 0) is replaced one group at a time.
    ups = await ds_events(api, ns, c.EVENT_SCALING_UP)
    assert sorted(note for note in ups if f"LWS {DS}-0-{new}-serve" in note) == [
        f"Scaling up serve LWS {DS}-0-{new}-serve from {n} to {n + 1} replicas" for n in range(3)
    ]
    assert f"Deleted drained LWS {DS}-0-{old}-serve" in await ds_events(api, ns, c.EVENT_LWS_DELETED)


async def test_sub_roles_are_not_accepted_silently(api: KubeClient, ns: str) -> None:
    """Sub-roles (upstream main's `roles[].subRoles`) are not supported: the schema has no such field,
    so strict field validation (kubectl's default) refuses it by name, and no set is created."""
    body = DisaggregatedSetBuilder(ns).role("serve", 2).obj()
    body["spec"]["roles"][0]["subRoles"] = [{"name": "pool-a", "replicas": 1}]
    with pytest.raises(ApiStatusError) as raised:
        await api.request(
            "POST",
            DISAGGREGATEDSETS.collection_path(ns),
            body=body,
            params={"fieldValidation": "Strict"},
        )
    assert raised.value.code == 400
    assert 'unknown field "spec.roles[0].subRoles"' in raised.value.status.message
    assert await api.get_or_none(DISAGGREGATEDSETS, ns, DS) is None
