"""Decode/encode of the CR models: upstream samples round-trip, unknown fields survive, zero values
that matter are kept, and decoding is as lenient as Go's."""

import copy
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderworkerset.api import constants as c
from leaderworkerset.api.codec import (
    KINDS,
    DecodeError,
    decode_ds,
    decode_dsrs,
    decode_lws,
    decode_object,
    encode,
)
from leaderworkerset.api.disaggregatedset import DisaggregatedSetRoleScaler
from leaderworkerset.api.leaderworkerset import (
    LeaderWorkerSet,
    LeaderWorkerTemplate,
    persistent_volume_claim,
    pod_template_spec,
    raw_pod_template,
)
from tests.support import upstream

OUR_KINDS = {kind for _, kind in KINDS}


class _NoTimestampLoader(yaml.SafeLoader):
    """YAML loader that keeps timestamps as strings, as a JSON API server would send them."""


_NoTimestampLoader.yaml_implicit_resolvers = {
    k: [r for r in v if r[0] != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _upstream_objects() -> list[Any]:
    params = []
    for path in [*upstream.files("samples"), *upstream.files("examples")]:
        for doc in yaml.load_all(path.read_text(), Loader=_NoTimestampLoader):
            if isinstance(doc, dict) and doc.get("kind") in OUR_KINDS:
                name = doc.get("metadata", {}).get("name", "?")
                params.append(pytest.param(doc, id=f"{path.parent.name}/{path.name}:{doc['kind']}/{name}"))
    return params


# Upstream's samples and examples hold 18 LeaderWorkerSet/DisaggregatedSet objects; fewer means the
# data is absent or was cut down, and the tests below fail or skip loudly instead of shrinking.
UPSTREAM_OBJECTS = upstream.params(_upstream_objects(), minimum=18, what="upstream LWS/DS objects")


def test_upstream_data_has_objects_of_every_kind_we_model_for_lws_and_ds() -> None:
    for param in UPSTREAM_OBJECTS:
        upstream.check_case(param.values[0])
    kinds = {p.values[0]["kind"] for p in UPSTREAM_OBJECTS}
    assert {c.LWS_KIND, c.DS_KIND} <= kinds


@pytest.mark.parametrize("obj", UPSTREAM_OBJECTS)
def test_upstream_object_round_trips_unchanged(obj: dict[str, Any]) -> None:
    upstream.check_case(obj)
    assert encode(decode_object(copy.deepcopy(obj))) == obj


def _lws(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    lwt = {"size": 2, "workerTemplate": template, **spec.pop("lwt", {})}
    return {
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "metadata": {"name": "lws", "namespace": "default"},
        "spec": {"leaderWorkerTemplate": lwt, **spec},
    }


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        pytest.param(
            _lws(lwt={"workerTemplate": {"spec": {"containers": [{"name": "c", "fancyNew": {"x": 1}}]}}}),
            ("spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", 0, "fancyNew"),
            id="unknown container field in worker template",
        ),
        pytest.param(
            _lws(lwt={"leaderTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"newPodField": True}}}),
            ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec", "newPodField"),
            id="unknown pod spec field in leader template",
        ),
        pytest.param(
            _lws(lwt={"workerTemplate": {"metadata": {"creationTimestamp": None}, "spec": {}}}),
            ("spec", "leaderWorkerTemplate", "workerTemplate", "metadata", "creationTimestamp"),
            id="explicit null kept inside a template",
        ),
        pytest.param(
            _lws(lwt={"volumeClaimTemplates": [{"metadata": {"name": "v"}, "spec": {"futureKnob": "on"}}]}),
            ("spec", "leaderWorkerTemplate", "volumeClaimTemplates", 0, "spec", "futureKnob"),
            id="unknown field in a volume claim template",
        ),
        pytest.param(
            _lws(rolloutStrategy={"rollingUpdateConfiguration": {"maxUnavailable": 0}}),
            ("spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxUnavailable"),
            id="maxUnavailable 0 is kept so the CRD default cannot turn it into 1",
        ),
        pytest.param(
            _lws(rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": "50%", "partition": 0}}),
            ("spec", "rolloutStrategy", "rollingUpdateConfiguration", "partition"),
            id="partition 0 is kept",
        ),
        pytest.param(_lws(replicas=0), ("spec", "replicas"), id="replicas 0 is kept"),
        pytest.param(
            _lws(rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": "5"}}),
            ("spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxSurge"),
            id="int-or-string keeps a numeric string a string",
        ),
        pytest.param(
            _lws(lwt={"maxGroupRestarts": 0}),
            ("spec", "leaderWorkerTemplate", "maxGroupRestarts"),
            id="maxGroupRestarts 0 is kept",
        ),
        pytest.param(
            _lws(scheduling={"replica": {"leader": {"schedulingPolicy": {"basic": {}}}}}),
            ("spec", "scheduling", "replica", "leader", "schedulingPolicy", "basic"),
            id="empty union member in scheduling is kept",
        ),
        pytest.param(
            _lws(groupIdentity="Hash", groupReplacementPolicy="Immediate"),
            ("spec", "groupReplacementPolicy"),
            id="v1.0 group identity fields",
        ),
    ],
)
def test_field_survives_round_trip(obj: dict[str, Any], path: tuple[Any, ...]) -> None:
    out = encode(decode_lws(copy.deepcopy(obj)))
    assert out == obj
    want: Any = obj
    got: Any = out
    for step in path:
        want, got = want[step], got[step]
    assert got == want


def test_status_round_trips_with_conditions() -> None:
    obj = _lws()
    obj["status"] = {
        "replicas": 2,
        "readyReplicas": 1,
        "hpaPodSelector": "leaderworkerset.sigs.k8s.io/name=lws,leaderworkerset.sigs.k8s.io/worker-index=0",
        "observedGeneration": 3,
        "conditions": [
            {
                "type": "Available",
                "status": "False",
                "reason": "AllGroupsReady",
                "message": "All replicas are ready",
                "lastTransitionTime": "2026-01-02T03:04:05Z",
                "observedGeneration": 3,
            }
        ],
    }
    assert encode(decode_lws(copy.deepcopy(obj))) == obj


@pytest.mark.parametrize(
    ("obj", "want_api_version", "want_kind"),
    [
        pytest.param({"spec": {}}, c.LWS_API_VERSION, c.LWS_KIND, id="lws without type meta"),
        pytest.param(
            {"apiVersion": "x/v9", "kind": "Other"}, "x/v9", "Other", id="type meta given is kept as is"
        ),
    ],
)
def test_type_meta_is_filled_when_missing(obj: dict[str, Any], want_api_version: str, want_kind: str) -> None:
    out = encode(decode_lws(obj))
    assert (out["apiVersion"], out["kind"]) == (want_api_version, want_kind)


def test_new_structs_encode_type_meta() -> None:
    assert encode(LeaderWorkerSet())["kind"] == c.LWS_KIND
    assert encode(decode_ds({}))["kind"] == c.DS_KIND
    assert encode(decode_dsrs({}))["kind"] == c.DSRS_KIND


def test_role_scaler_spec_replicas_zero_is_always_written() -> None:
    # The /scale subresource fails when spec.replicas is absent, so Go never omits it.
    assert encode(DisaggregatedSetRoleScaler())["spec"] == {"replicas": 0}


@pytest.mark.parametrize(
    ("obj", "want_spec"),
    [
        pytest.param(_lws(replicas=-1), {"replicas": -1}, id="negative replicas"),
        pytest.param(_lws(replicas=2_000_000), {"replicas": 2_000_000}, id="replicas above the CRD maximum"),
        pytest.param(
            _lws(lwt={"size": 0, "restartPolicy": "Bogus"}),
            {"leaderWorkerTemplate": {"size": 0, "restartPolicy": "Bogus"}},
            id="size 0 and unknown enum value",
        ),
        pytest.param(
            {"spec": {"unknownTopLevel": 1}},
            {"unknownTopLevel": None},
            id="unknown spec field is ignored",
        ),
    ],
)
def test_decode_does_not_enforce_crd_rules(obj: dict[str, Any], want_spec: dict[str, Any]) -> None:
    # Webhooks must see such objects, values intact, to reject them with upstream's messages.
    spec = encode(decode_lws(copy.deepcopy(obj)))["spec"]
    for key, want in want_spec.items():
        got = spec.get(key)
        if isinstance(want, dict):
            assert {k: got[k] for k in want} == want
        else:
            assert got == want


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"spec": {"replicas": "three"}}, id="string where an integer belongs"),
        pytest.param({"spec": {"replicas": "3"}}, id="numeric string where an integer belongs"),
        pytest.param({"spec": {"leaderWorkerTemplate": []}}, id="list where an object belongs"),
    ],
)
def test_decode_rejects_wrong_json_types(obj: dict[str, Any]) -> None:
    with pytest.raises(DecodeError, match=r"spec"):
        decode_lws(obj)


def test_decode_object_rejects_foreign_kinds() -> None:
    with pytest.raises(DecodeError, match="apiVersion='apps/v1'"):
        decode_object({"apiVersion": "apps/v1", "kind": "StatefulSet"})


@pytest.mark.parametrize(
    ("lwt", "want_leader"),
    [
        pytest.param(
            LeaderWorkerTemplate(worker_template={"spec": {"hostname": "w"}}),
            {"spec": {"hostname": "w"}},
            id="no leader template: leaders use the worker template",
        ),
        pytest.param(
            LeaderWorkerTemplate(leader_template={"spec": {"hostname": "l"}}, worker_template={"spec": {}}),
            {"spec": {"hostname": "l"}},
            id="leader template wins",
        ),
    ],
)
def test_leader_pod_template(lwt: LeaderWorkerTemplate, want_leader: dict[str, Any]) -> None:
    assert lwt.leader_pod_template() == want_leader


def test_typed_views_of_raw_templates() -> None:
    raw = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    typed = pod_template_spec(raw)
    assert typed.spec is not None
    assert typed.spec.containers[0].image == "i"
    assert raw_pod_template(typed) == raw
    pvc = persistent_volume_claim({"metadata": {"name": "v"}, "spec": {"accessModes": ["ReadWriteOnce"]}})
    assert pvc.spec is not None
    assert pvc.spec.accessModes == ["ReadWriteOnce"]


def test_json_schema_carries_crd_facts() -> None:
    _, defs = msgspec.json.schema_components([LeaderWorkerSet])
    spec = defs["LeaderWorkerSetSpec"]["properties"]
    replicas = spec["replicas"]["anyOf"][0]
    assert (replicas["minimum"], replicas["maximum"], replicas["default"]) == (0, 1_000_000, 1)
    lwt = defs["LeaderWorkerTemplate"]["properties"]
    assert lwt["restartPolicy"]["enum"] == list(c.RESTART_POLICIES)
    ruc = defs["RollingUpdateConfiguration"]["properties"]
    assert ruc["maxSurge"]["anyOf"][0]["x-kubernetes-int-or-string"] is True


_JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
_KEYS = st.text(min_size=1, max_size=6)
_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(
    worker=st.dictionaries(_KEYS, _JSON, max_size=4),
    leader=st.dictionaries(_KEYS, _JSON, max_size=4),
    claims=st.lists(st.dictionaries(_KEYS, _JSON, max_size=3), max_size=2),
)
def test_any_json_inside_templates_survives(
    worker: dict[str, Any], leader: dict[str, Any], claims: list[dict[str, Any]]
) -> None:
    obj = _lws(lwt={"workerTemplate": worker, "leaderTemplate": leader, "volumeClaimTemplates": claims})
    assert encode(decode_lws(copy.deepcopy(obj))) == obj


def test_server_side_metadata_round_trips() -> None:
    obj = _lws()
    obj["metadata"] = {
        "name": "lws",
        "namespace": "default",
        "uid": "0b7c4f8e",
        "resourceVersion": "12",
        "generation": 3,
        "creationTimestamp": "2026-01-02T03:04:05Z",
        "labels": {"app": "x"},
        "annotations": {c.ANNOTATION_EXCLUSIVE_TOPOLOGY: "rack"},
        "finalizers": ["example.com/hold"],
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "X", "name": "n", "uid": "u", "controller": True},
        ],
        "managedFields": [
            {
                "manager": "kubectl",
                "operation": "Update",
                "apiVersion": c.LWS_API_VERSION,
                "time": "2026-01-02T03:04:05Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:replicas": {}}},
            }
        ],
    }
    assert encode(decode_lws(copy.deepcopy(obj))) == obj
