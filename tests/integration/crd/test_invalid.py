"""Invalid objects are rejected by the API server with our CRDs, at the expected field path.

No webhook runs here: every rejection comes from the CRD schema (types, enums, bounds, required
fields, list-map keys, CEL rules).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from lightkube import ApiError, AsyncClient

from leaderworkerset.api import constants as c
from leaderworkerset.crd.markers import DS_REPLICAS_MESSAGE, DS_REPLICAS_MESSAGE_V1
from tests.integration.crd.objects import OUR_KINDS, UPSTREAM_KINDS, for_upstream

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
WORKER = ("spec", "leaderWorkerTemplate", "workerTemplate")
CONTAINER = (*WORKER, "spec", "containers", 0)


def _pod_template() -> Obj:
    return {"spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}


def lws() -> Obj:
    return {
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "metadata": {"name": "invalid"},
        "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2, "workerTemplate": _pod_template()}},
    }


def _role(name: str, replicas: int | None = 1) -> Obj:
    spec: Obj = {"leaderWorkerTemplate": {"workerTemplate": _pod_template()}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"name": name, "spec": spec}


def ds() -> Obj:
    return {
        "apiVersion": c.DS_API_VERSION,
        "kind": c.DS_KIND,
        "metadata": {"name": "invalid"},
        "spec": {"roles": [_role("prefill"), _role("decode")]},
    }


def dsrs() -> Obj:
    return {
        "apiVersion": c.DS_API_VERSION,
        "kind": c.DSRS_KIND,
        "metadata": {"name": "invalid"},
        "spec": {"replicas": 1},
    }


def set_(*path: str | int, value: Any) -> Callable[[Obj], None]:
    def apply(obj: Obj) -> None:
        node: Any = obj
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return apply


def drop(*path: str | int) -> Callable[[Obj], None]:
    def apply(obj: Obj) -> None:
        node: Any = obj
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return apply


@dataclass(frozen=True)
class Case:
    base: Callable[[], Obj]
    change: Callable[[Obj], None]
    want_field: str
    want_text: str  # a fragment of the API server's message for that field
    v1_only: bool  # a v1.0 field: upstream's pre-v1.0 CRD prunes it and accepts the object
    # Where we follow upstream main after v1.0 (docs/compatibility.md) and upstream's snapshot still
    # answers the older way: its fragment of the message ("" = the same as ours).
    upstream_text: str = ""


# Field paths as the API server reports them.
T = "spec.leaderWorkerTemplate"
W = T + ".workerTemplate"
C = W + ".spec.containers[0]"


def bad(
    case_id: str,
    base: Callable[[], Obj],
    change: Callable[[Obj], None],
    field: str,
    text: str,
    *,
    v1_only: bool = False,
    upstream_text: str = "",
) -> Any:
    return pytest.param(Case(base, change, field, text, v1_only, upstream_text), id=case_id)


CASES = [
    # --- LeaderWorkerSet: bounds and types
    bad(
        "lws negative replicas",
        lws,
        set_("spec", "replicas", value=-1),
        "spec.replicas",
        "greater than or equal to 0",
    ),
    bad(
        "lws replicas above a million",
        lws,
        set_("spec", "replicas", value=1_000_001),
        "spec.replicas",
        "less than or equal to 1000000",
    ),
    bad("lws replicas not a number", lws, set_("spec", "replicas", value="two"), "spec.replicas", "integer"),
    bad(
        "lws size as string",
        lws,
        set_("spec", "leaderWorkerTemplate", "size", value="4"),
        T + ".size",
        "integer",
    ),
    bad(
        "lws negative maxGroupRestarts (v1.0)",
        lws,
        set_("spec", "leaderWorkerTemplate", "maxGroupRestarts", value=-1),
        T + ".maxGroupRestarts",
        "greater than or equal to 0",
        v1_only=True,
    ),
    bad(
        "lws partition not a number",
        lws,
        set_(
            "spec",
            "rolloutStrategy",
            value={"type": "RollingUpdate", "rollingUpdateConfiguration": {"partition": "x"}},
        ),
        "spec.rolloutStrategy.rollingUpdateConfiguration.partition",
        "integer",
    ),
    bad(
        "lws maxSurge boolean",
        lws,
        set_("spec", "rolloutStrategy", value={"rollingUpdateConfiguration": {"maxSurge": True}}),
        "spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge",
        "must be of type integer",
    ),
    # --- LeaderWorkerSet: enums
    bad(
        "lws bad startupPolicy",
        lws,
        set_("spec", "startupPolicy", value="Eventually"),
        "spec.startupPolicy",
        "Unsupported value",
    ),
    bad(
        "lws bad restartPolicy",
        lws,
        set_("spec", "leaderWorkerTemplate", "restartPolicy", value="Always"),
        T + ".restartPolicy",
        "Unsupported value",
    ),
    bad(
        "lws bad rollout type",
        lws,
        set_("spec", "rolloutStrategy", value={"type": "Recreate"}),
        "spec.rolloutStrategy.type",
        "Unsupported value",
    ),
    bad(
        "lws bad subdomainPolicy",
        lws,
        set_("spec", "networkConfig", value={"subdomainPolicy": "PerPod"}),
        "spec.networkConfig.subdomainPolicy",
        "Unsupported value",
    ),
    bad(
        "lws doc-only subgroup type LeaderOnly",
        lws,
        set_(
            "spec",
            "leaderWorkerTemplate",
            "subGroupPolicy",
            value={"subGroupPolicyType": "LeaderOnly", "subGroupSize": 1},
        ),
        T + ".subGroupPolicy.subGroupPolicyType",
        "Unsupported value",
    ),
    bad(
        "lws bad groupIdentity (v1.0)",
        lws,
        set_("spec", "groupIdentity", value="Random"),
        "spec.groupIdentity",
        "Unsupported value",
        v1_only=True,
    ),
    bad(
        "lws bad groupReplacementPolicy (v1.0)",
        lws,
        set_("spec", "groupReplacementPolicy", value="Later"),
        "spec.groupReplacementPolicy",
        "Unsupported value",
        v1_only=True,
    ),
    # --- LeaderWorkerSet: required fields
    bad("lws missing leaderWorkerTemplate", lws, drop("spec", "leaderWorkerTemplate"), T, "Required"),
    bad("lws missing workerTemplate", lws, drop(*WORKER), W, "Required"),
    bad(
        "lws networkConfig without subdomainPolicy",
        lws,
        set_("spec", "networkConfig", value={}),
        "spec.networkConfig.subdomainPolicy",
        "Required",
    ),
    # --- LeaderWorkerSet: the embedded pod template is fully validated
    bad(
        "pod template without containers",
        lws,
        drop(*WORKER, "spec", "containers"),
        W + ".spec.containers",
        "Required",
    ),
    bad("container without name", lws, drop(*CONTAINER, "name"), C + ".name", "Required"),
    bad(
        "port without containerPort",
        lws,
        set_(*CONTAINER, "ports", value=[{"name": "http"}]),
        C + ".ports[0].containerPort",
        "Required",
    ),
    bad(
        "malformed quantity",
        lws,
        set_(*CONTAINER, "resources", value={"limits": {"cpu": "lots"}}),
        C + ".resources.limits.cpu",
        "should match",
    ),
    bad(
        "fieldRef without fieldPath",
        lws,
        set_(*CONTAINER, "env", value=[{"name": "X", "valueFrom": {"fieldRef": {}}}]),
        C + ".env[0].valueFrom.fieldRef.fieldPath",
        "Required",
    ),
    bad(
        "tolerations not a list",
        lws,
        set_(*WORKER, "spec", "tolerations", value={"key": "a"}),
        W + ".spec.tolerations",
        "array",
    ),
    bad(
        "template label not a string",
        lws,
        set_(*WORKER, "metadata", value={"labels": {"tier": 1}}),
        W + ".metadata.labels.tier",
        "string",
    ),
    bad(
        "node selector without terms",
        lws,
        set_(
            *WORKER,
            "spec",
            "affinity",
            value={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}},
        ),
        W + ".spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
        "Required",
    ),
    bad(
        "leader container without name",
        lws,
        set_(
            "spec", "leaderWorkerTemplate", "leaderTemplate", value={"spec": {"containers": [{"image": "x"}]}}
        ),
        T + ".leaderTemplate.spec.containers[0].name",
        "Required",
    ),
    bad(
        "duplicate volumeMount path",
        lws,
        set_(
            *CONTAINER,
            "volumeMounts",
            value=[{"name": "a", "mountPath": "/a"}, {"name": "b", "mountPath": "/a"}],
        ),
        C + ".volumeMounts[1]",
        "Duplicate value",
    ),
    bad(
        "volume claim with malformed size",
        lws,
        set_(
            "spec",
            "leaderWorkerTemplate",
            "volumeClaimTemplates",
            value=[{"metadata": {"name": "d"}, "spec": {"resources": {"requests": {"storage": "big"}}}}],
        ),
        T + ".volumeClaimTemplates[0].spec.resources.requests.storage",
        "should match",
    ),
    # --- LeaderWorkerSet: spec.scheduling (v1.0)
    bad(
        "scheduling gang of zero (v1.0)",
        lws,
        set_("spec", "scheduling", value={"replica": {"schedulingPolicy": {"gang": {"minGroupCount": 0}}}}),
        "spec.scheduling.replica.schedulingPolicy.gang.minGroupCount",
        "greater than or equal to 1",
        v1_only=True,
    ),
    bad(
        "scheduling five shared claims (v1.0)",
        lws,
        set_(
            "spec",
            "scheduling",
            value={"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]},
        ),
        "spec.scheduling.resourceClaims",
        "at most 4",
        v1_only=True,
    ),
    bad(
        "scheduling claim without name (v1.0)",
        lws,
        set_("spec", "scheduling", value={"resourceClaims": [{"resourceClaimName": "x"}]}),
        "spec.scheduling.resourceClaims[0].name",
        "Required",
        v1_only=True,
    ),
    # --- DisaggregatedSet
    bad("ds without spec", ds, drop("spec"), "spec", "Required"),
    bad(
        "ds without roles",
        ds,
        set_("spec", "roles", value=[]),
        "spec.roles",
        "should have at least 1 items",
        upstream_text="should have at least 2 items",
    ),
    bad(
        "ds eleven roles",
        ds,
        set_("spec", "roles", value=[_role(f"r{i}") for i in range(11)]),
        "spec.roles",
        "at most 10",
    ),
    bad(
        "ds role name not a DNS label",
        ds,
        set_("spec", "roles", 0, "name", value="Prefill"),
        "spec.roles[0].name",
        "should match",
    ),
    bad(
        "ds role name too long",
        ds,
        set_("spec", "roles", 0, "name", value="r" * 64),
        "spec.roles[0].name",
        "may not be more than 63",
    ),
    bad("ds role without name", ds, drop("spec", "roles", 0, "name"), "spec.roles[0].name", "Required"),
    bad(
        "ds duplicate role names",
        ds,
        set_("spec", "roles", 1, "name", value="prefill"),
        "spec.roles[1]",
        "Duplicate value",
    ),
    bad("ds zero slices", ds, set_("spec", "slices", value=0), "spec.slices", "greater than or equal to 1"),
    bad("ds 101 slices", ds, set_("spec", "slices", value=101), "spec.slices", "less than or equal to 100"),
    bad(
        "ds bad placement type",
        ds,
        set_("spec", "placementPolicy", value={"type": "Spread"}),
        "spec.placementPolicy.type",
        "Unsupported value",
    ),
    bad(
        "ds bad scaling mode",
        ds,
        set_("spec", "roles", 0, "scaling", value={"mode": "Auto"}),
        "spec.roles[0].scaling.mode",
        "Unsupported value",
    ),
    bad(
        "ds mixed zero and non-zero replicas (CEL)",
        ds,
        set_("spec", "roles", 1, "spec", "replicas", value=0),
        "spec",
        DS_REPLICAS_MESSAGE,
        upstream_text=DS_REPLICAS_MESSAGE_V1,
    ),
    bad(
        "ds negative role replicas",
        ds,
        set_("spec", "roles", 0, "spec", "replicas", value=-1),
        "spec.roles[0].spec.replicas",
        "greater than or equal to 0",
    ),
    bad(
        "ds role bad restartPolicy",
        ds,
        set_("spec", "roles", 0, "spec", "leaderWorkerTemplate", "restartPolicy", value="Always"),
        "spec.roles[0].spec.leaderWorkerTemplate.restartPolicy",
        "Unsupported value",
    ),
    bad(
        "ds role without workerTemplate",
        ds,
        drop("spec", "roles", 0, "spec", "leaderWorkerTemplate", "workerTemplate"),
        "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate",
        "Required",
    ),
    # --- DisaggregatedSetRoleScaler
    bad(
        "dsrs negative replicas",
        dsrs,
        set_("spec", "replicas", value=-1),
        "spec.replicas",
        "greater than or equal to 0",
    ),
    bad("dsrs replicas as string", dsrs, set_("spec", "replicas", value="3"), "spec.replicas", "integer"),
]


def _causes(err: ApiError) -> list[tuple[str, str]]:
    details = err.status.details
    causes = details.causes if details is not None and details.causes else []
    return [(cause.field or "", cause.message or "") for cause in causes]


@pytest.mark.parametrize("case", CASES)
async def test_invalid_object_is_rejected_at_the_field(
    kube: AsyncClient, namespace: str, installed_crds: list[str], case: Case
) -> None:
    obj = copy.deepcopy(case.base())
    case.change(obj)
    obj["metadata"]["namespace"] = namespace
    resource = OUR_KINDS[obj["kind"]]

    with pytest.raises(ApiError) as raised:
        await kube.create(resource.from_dict(obj), namespace=namespace)

    assert raised.value.status.code == 422
    causes = _causes(raised.value)
    assert any(field == case.want_field and case.want_text in message for field, message in causes), causes


@pytest.mark.parametrize("case", CASES)
async def test_upstreams_crd_judges_the_same_object_alike(
    kube: AsyncClient, namespace: str, upstream_crds: list[str], case: Case
) -> None:
    obj = for_upstream(copy.deepcopy(case.base()))
    case.change(obj)
    obj["metadata"]["namespace"] = namespace
    resource = UPSTREAM_KINDS[obj["kind"]]

    if case.v1_only:
        await kube.create(resource.from_dict(obj), namespace=namespace)  # pruned, not rejected
        return
    with pytest.raises(ApiError) as raised:
        await kube.create(resource.from_dict(obj), namespace=namespace)
    causes = _causes(raised.value)
    text = case.upstream_text or case.want_text
    assert any(field == case.want_field and text in message for field, message in causes), causes


def test_enough_invalid_cases() -> None:
    assert len(CASES) >= 30
