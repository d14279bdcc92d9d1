"""Fuzzed LeaderWorkerSets, DisaggregatedSets and pods through the real kube-apiserver with our
webhooks registered.

Cases come from `fuzz.generate` (hypothesis, derandomized: schema-driven values, wrong types,
boundaries and deletions applied to upstream's samples and examples; pods as the StatefulSet
controller sends them, with their labels and annotations mutated). Each is created for real (a
quarter of the LWS/DS cases as an update of the unmutated object). Invariants:

* no 5xx and no timeout: the API server never reports a failed webhook call;
* every rejection is a 4xx whose message names a field path (pods: the field or the pod, as
  upstream's pod-webhook wording does);
* nothing half-applied: a rejected create leaves no object, a rejected update leaves the stored one
  untouched; an accepted object is stored fully defaulted and valid by our own rules.

Sizes: ``LWS_CHAOS_SIZE=full`` sends 10,000 of each kind.
"""

from __future__ import annotations

import asyncio
import collections
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS, PODS, ResourceRef
from leaderworkerset.webhooks import disaggregatedset, leaderworkerset
from tests.chaos import sizes
from tests.chaos.input import fuzz, report

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
COUNT = sizes.pick(ci=150, full=10_000)
IN_FLIGHT = 8
# Far above the webhooks' own 10 s timeout: a request the API server has not answered by then hangs.
REQUEST_DEADLINE = 60.0
REFS: dict[str, ResourceRef] = {c.LWS_KIND: LEADERWORKERSETS, c.DS_KIND: DISAGGREGATEDSETS, "Pod": PODS}
WEBHOOK_DENIED = "denied the request: "
_URL_SAFE = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


@pytest.fixture(scope="module")
async def fast_client(apiserver_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    """No client-side throttling: the fuzzer's rate is bounded by IN_FLIGHT alone."""
    client = new_client(ClientOptions(kubeconfig=str(apiserver_cluster.kubeconfig), qps=1000, burst=2000))
    yield client
    await client.close()


@dataclass
class Tally:
    accepted: int = 0
    rejected: int = 0
    by_source: collections.Counter[str] = field(default_factory=collections.Counter)
    by_field: collections.Counter[str] = field(default_factory=collections.Counter)
    names_touched: int = 0
    names_other: int = 0
    updates: int = 0
    apiserver_unnamed: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)

    def fail(self, case: fuzz.Case, what: str) -> None:
        self.failures.append(f"{case.origin} {case.touched} {case.mutations}: {what}")


def _source(err: ApiStatusError) -> str:
    message = err.status.message
    if WEBHOOK_DENIED in message:
        return "webhook " + message.split('"')[1]
    return f"apiserver {err.code} {err.status.reason}"


def _field(message: str) -> str:
    named = fuzz.fields_named(message.split(WEBHOOK_DENIED)[-1])
    return fuzz._INDEX.sub("[]", named[0]) if named else ""


def _names_a_field_or_the_pod(case: fuzz.Case, message: str) -> bool:
    if fuzz.fields_named(message):
        return True
    # Upstream's pod-webhook denials name the pod (and what of it is wrong), not a field path.
    meta = case.obj.get("metadata") or {}
    refs = (f"pod {meta.get('name')}", f"pod {meta.get('namespace')}/")
    return case.kind == "Pod" and any(ref in message for ref in refs)


def _stored_fully(case: fuzz.Case, stored: Obj) -> str:
    """Why the stored object is not what a full admission produces, or ""."""
    if case.kind == c.LWS_KIND:
        if leaderworkerset.default_lws(stored)["spec"] != stored["spec"]:
            return "stored LWS is not fully defaulted"
        errors = leaderworkerset.validate_create(stored)
        return f"stored LWS breaks our rules: {errors}" if errors else ""
    if case.kind == c.DS_KIND:
        _, errors = disaggregatedset.validate(stored)
        return f"stored DS breaks our rules: {errors}" if errors else ""
    labels = stored["metadata"].get("labels") or {}
    if c.LABEL_SET_NAME in labels:
        if c.LABEL_WORKER_INDEX not in labels:
            return "stored LWS pod has no worker-index label"
        for container in stored["spec"]["containers"]:
            if not any(env.get("name") == c.ENV_LWS_LEADER_ADDRESS for env in container.get("env") or []):
                return f"container {container['name']} has no {c.ENV_LWS_LEADER_ADDRESS}"
    return ""


def _name_of(case: fuzz.Case, index: int) -> str:
    """The name the case's object is created under (the fuzzed one when a mutation chose it)."""
    meta = case.obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    touched = any(t in ("metadata", "metadata.name") for t in case.touched)
    return name if touched and isinstance(name, str) and name else f"fz-{index}"


def _prepare(case: fuzz.Case, namespace: str, index: int) -> tuple[Obj, Obj | None]:
    obj, base = case.obj, case.base
    for target in (obj, base):
        if target is None:
            continue
        meta = target.setdefault("metadata", {}) if isinstance(target.get("metadata"), dict) else None
        if meta is None:
            target["metadata"] = meta = {}
        meta["namespace"] = namespace
        for key in ("resourceVersion", "uid", "creationTimestamp"):
            meta.pop(key, None)
    name = _name_of(case, index)
    obj["metadata"]["name"] = name
    if base is not None:
        base["metadata"]["name"] = name
    return obj, base


async def _send(client: KubeClient, case: fuzz.Case, namespace: str, index: int, tally: Tally) -> None:
    ref = REFS[case.kind]
    obj, base = _prepare(case, namespace, index)
    name = obj["metadata"]["name"]
    before: Obj | None = None
    if case.update and base is not None:
        try:
            before = await client.create(ref, base, namespace)
        except ApiStatusError:
            before = None  # a sample this cluster does not admit as is: send the case as a create
    try:
        if before is not None:
            tally.updates += 1
            obj["metadata"]["resourceVersion"] = before["metadata"]["resourceVersion"]
            await asyncio.wait_for(client.update(ref, obj), REQUEST_DEADLINE)
        else:
            await asyncio.wait_for(client.create(ref, obj, namespace), REQUEST_DEADLINE)
    except TimeoutError:
        tally.fail(case, "no answer within the deadline")
        return
    except ApiStatusError as err:
        await _rejected(client, case, err, before, name, namespace, tally)
        return
    finally:
        obj["metadata"].pop("resourceVersion", None)
    tally.accepted += 1
    stored = await client.get(ref, namespace, name)
    problem = _stored_fully(case, stored)
    if problem:
        tally.fail(case, problem)
    await client.delete(ref, namespace, name, grace_period_seconds=0)


async def _stored(client: KubeClient, ref: ResourceRef, namespace: str, name: str) -> Obj | None:
    if _URL_SAFE.fullmatch(name):
        return await client.get_or_none(ref, namespace, name)
    # A fuzzed name that is no valid path segment: look for it in the (small) namespace listing.
    return next((o for o in await client.list(ref, namespace) if o["metadata"]["name"] == name), None)


async def _rejected(
    client: KubeClient,
    case: fuzz.Case,
    err: ApiStatusError,
    before: Obj | None,
    name: str,
    namespace: str,
    tally: Tally,
) -> None:
    message = err.status.message
    ref = REFS[case.kind]
    if err.code >= 500 or "failed calling webhook" in message:
        tally.fail(case, f"{err.code}: {message[:300]}")
        return
    if err.code == 409 and before is None:
        return  # two cases mutated their names to the same value: not a verdict on the input
    tally.rejected += 1
    tally.by_source[_source(err)] += 1
    tally.by_field[f"{case.kind} {_field(message) or '(pod named)'}"] += 1
    if not _names_a_field_or_the_pod(case, message):
        if WEBHOOK_DENIED in message:
            tally.fail(case, f"our rejection names no field: {message[:300]}")
        else:
            # The API server's own wording (e.g. its quantity parser): reported, not ours to change.
            tally.apiserver_unnamed[message[:160]] += 1
    if fuzz.names_touched(message, case.touched):
        tally.names_touched += 1
    else:
        tally.names_other += 1
    current = await _stored(client, ref, namespace, name)
    if before is None and current is not None:
        tally.fail(case, "a rejected create left an object behind")
    if before is not None:
        if current is None or current["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]:
            tally.fail(case, "a rejected update changed the stored object")
        await client.delete(ref, namespace, name, grace_period_seconds=0)


@pytest.mark.parametrize("kind", fuzz.KINDS)
async def test_fuzzed_objects_are_admitted_or_rejected_naming_a_field(
    kind: str, fast_client: KubeClient, webhook_namespace: str
) -> None:
    cases = await asyncio.to_thread(fuzz.generate, kind, COUNT)
    # Hypothesis stops early only when the strategy cannot yield more distinct inputs; ours can.
    assert len(cases) == COUNT
    tally = Tally()
    slots = asyncio.Semaphore(IN_FLIGHT)

    # Cases whose mutations chose the same name run one after the other: otherwise one case's
    # object would be taken for what another's rejected create left behind.
    by_name: collections.defaultdict[str, asyncio.Lock] = collections.defaultdict(asyncio.Lock)

    async def one(index: int, case: fuzz.Case) -> None:
        async with slots, by_name[_name_of(case, index)]:
            await _send(fast_client, case, webhook_namespace, index, tally)

    await asyncio.gather(*(one(i, case) for i, case in enumerate(cases)))
    report.emit(
        f"webhook-fuzz-{kind.lower()}",
        {
            "generated": len(cases),
            "accepted": tally.accepted,
            "rejected": tally.rejected,
            "updates": tally.updates,
            "rejections naming a touched field": tally.names_touched,
            "rejections naming another field": tally.names_other,
            "rejected by": dict(tally.by_source.most_common()),
            "rejections by field": dict(tally.by_field.most_common(40)),
            "API server rejections naming no field": dict(tally.apiserver_unnamed.most_common(10)),
            "failures": len(tally.failures),
            "failure examples": tally.failures[:10],
        },
    )
    assert not tally.failures, "\n".join(tally.failures[:30])
    # Both verdicts occur: a fuzzer whose inputs were all rejected (or all admitted) tested little.
    assert tally.accepted > 0
    assert tally.rejected > 0
