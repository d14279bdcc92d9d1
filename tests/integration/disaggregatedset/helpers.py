"""Reading the DS system on the API server and playing the LWS controller for it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, EVENTS, LEADERWORKERSETS
from tests.support.builders.disaggregatedset import DS_NAME
from tests.support.wait import eventually

Obj = dict[str, Any]
DS = DS_NAME


async def create(api: KubeClient, body: Obj) -> Obj:
    return await api.create(DISAGGREGATEDSETS, body)


async def update_spec(api: KubeClient, ns: str, change: Any, name: str = DS) -> Obj:
    """Read-modify-write of the DS spec (retried on conflicts with the controller's status writes)."""

    async def attempt() -> Obj:
        ds = await api.get(DISAGGREGATEDSETS, ns, name)
        change(ds["spec"])
        try:
            updated: Obj = await api.update(DISAGGREGATEDSETS, ds)
        except ApiStatusError as err:
            if err.code == 409:
                raise AssertionError(f"conflict, retrying: {err}") from err
            raise
        return updated

    return await eventually(attempt)


def revision_of(ds: Obj) -> str:
    return disaggregated_revision(ds["spec"]["roles"])


async def children(api: KubeClient, ns: str, ds: str = DS) -> dict[str, Obj]:
    listed = await api.list(LEADERWORKERSETS, ns, label_selector=f"{c.LABEL_DS_NAME}={ds}")
    return {lws["metadata"]["name"]: lws for lws in listed}


async def live_children(api: KubeClient, ns: str, ds: str = DS) -> dict[str, Obj]:
    return {
        k: v for k, v in (await children(api, ns, ds)).items() if not v["metadata"].get("deletionTimestamp")
    }


async def expect_children(api: KubeClient, ns: str, want: dict[str, int], ds: str = DS) -> dict[str, Obj]:
    """Eventually exactly these live children (name → spec.replicas)."""

    async def check() -> dict[str, Obj]:
        got = await live_children(api, ns, ds)
        replicas = {name: lws["spec"].get("replicas") for name, lws in got.items()}
        assert replicas == want, f"children {replicas} != {want}"
        return got

    return await eventually(check)


async def set_child_status(
    api: KubeClient, ns: str, name: str, replicas: int, ready: int, updated: int
) -> None:
    status = {"replicas": replicas, "readyReplicas": ready, "updatedReplicas": updated}
    await api.patch_status(LEADERWORKERSETS, ns, name, {"status": status})


async def ds_condition(api: KubeClient, ns: str, type_: str, ds: str = DS) -> Obj | None:
    obj = await api.get(DISAGGREGATEDSETS, ns, ds)
    return next((x for x in (obj.get("status") or {}).get("conditions") or [] if x["type"] == type_), None)


async def expect_ds_condition(api: KubeClient, ns: str, type_: str, reason: str, ds: str = DS) -> Obj:
    async def check() -> Obj:
        got = await ds_condition(api, ns, type_, ds)
        assert got is not None, f"no {type_} condition"
        assert (got["status"], got["reason"]) == (c.CONDITION_TRUE, reason), f"{type_}: {got}"
        return got

    return await eventually(check)


async def ds_events(api: KubeClient, ns: str, reason: str) -> list[str]:
    return [e.get("note", "") for e in await api.list(EVENTS, ns) if e.get("reason") == reason]


async def expect_ds_event(api: KubeClient, ns: str, reason: str, note: str) -> None:
    async def check() -> bool:
        notes = await ds_events(api, ns, reason)
        assert note in notes, f"{reason} notes {notes} lack {note!r}"
        return True

    await eventually(check)


@contextlib.asynccontextmanager
async def play_lws(api: KubeClient, ns: str, ds: str = DS) -> AsyncIterator[None]:
    """A perfect LWS controller: every child's status reports spec.replicas ready and updated."""

    async def loop() -> None:
        while True:
            for name, lws in (await children(api, ns, ds)).items():
                want = lws["spec"].get("replicas", 1)
                status = lws.get("status") or {}
                got = (
                    status.get("replicas", 0),
                    status.get("readyReplicas", 0),
                    status.get("updatedReplicas", 0),
                )
                if got != (want, want, want):
                    with contextlib.suppress(ApiStatusError):
                        await set_child_status(api, ns, name, want, want, want)
            await asyncio.sleep(0.05)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def roll_role_image(api: KubeClient, ns: str, role: int, image: str, old: str) -> str:
    """Change one role's worker image (a new revision) and wait for RollingUpdateStarted; the revision."""

    def change(spec: Obj) -> None:
        worker = spec["roles"][role]["spec"]["leaderWorkerTemplate"]["workerTemplate"]
        worker["spec"]["containers"][0]["image"] = image

    new = revision_of(await update_spec(api, ns, change))
    assert new != old
    await expect_ds_event(
        api, ns, c.EVENT_ROLLING_UPDATE_STARTED, f"Started rolling update to revision {new}"
    )
    return new
