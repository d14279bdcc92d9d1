"""AdmissionReview handling: response shapes, JSON patches and denial messages."""

import base64
import json
from typing import Any

import jsonpatch
import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.webhooks.admission import WebhookOptions, review
from tests.support.builders import ds, ds_role, leader, lws

Obj = dict[str, Any]


def request(obj: Obj | None, operation: str = "CREATE", old: Obj | None = None) -> Obj:
    body: Obj = {"uid": "1234", "operation": operation, "object": obj}
    if old is not None:
        body["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def _with_meta(key: str, value: Any) -> Obj:
    pod = leader().obj()
    pod["metadata"][key] = value
    return pod


def _nested(depth: int) -> Obj:
    obj = lws().obj()
    inner: Obj = {}
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] = {"x": inner}
    for _ in range(depth):
        inner["x"] = {}
        inner = inner["x"]
    return obj


def patched(original: Obj, response: Obj) -> Obj:
    operations = json.loads(base64.b64decode(response["patch"]))
    result: Obj = jsonpatch.apply_patch(original, operations)
    return result


def test_lws_defaulting_returns_a_json_patch() -> None:
    original = lws().spec_field("rolloutStrategy", {}).spec_field("networkConfig", None).obj()
    answer = review(c.WEBHOOK_PATH_MUTATE_LWS, request(original))
    response = answer["response"]
    assert (answer["apiVersion"], answer["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert (response["uid"], response["allowed"], response["patchType"]) == ("1234", True, "JSONPatch")
    result = patched(original, response)
    assert result["spec"]["networkConfig"] == {"subdomainPolicy": c.SUBDOMAIN_SHARED}
    assert result["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] == {
        "partition": 0,
        "maxUnavailable": 1,
        "maxSurge": 0,
    }


def test_nothing_to_default_means_no_patch() -> None:
    response = review(c.WEBHOOK_PATH_MUTATE_LWS, request(lws().obj()))["response"]
    assert response["allowed"] is True
    assert "patch" not in response


def test_lws_validation_denial_carries_aggregated_field_errors() -> None:
    response = review(c.WEBHOOK_PATH_VALIDATE_LWS, request(lws().replicas(-1).size(0).obj()))["response"]
    assert response["allowed"] is False
    assert response["status"] == {
        "metadata": {},
        "code": 403,
        "reason": "Forbidden",
        "message": "[spec.replicas: Invalid value: -1: replicas must be equal or greater than 0, "
        "spec.leaderWorkerTemplate.size: Invalid value: 0: size must be equal or greater than 1]",
    }


def test_lws_update_compares_with_old_object() -> None:
    old = lws().size(2).subgroup(1).obj()
    new = lws().size(2).subgroup(2).obj()
    response = review(c.WEBHOOK_PATH_VALIDATE_LWS, request(new, "UPDATE", old))["response"]
    assert response["status"]["message"] == (
        "spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 2: field is immutable"
    )


def test_pod_mutation_patch_adds_labels_and_env() -> None:
    original = leader().obj()
    response = review(c.WEBHOOK_PATH_MUTATE_POD, request(original), WebhookOptions(token_source=lambda: "t"))[
        "response"
    ]
    result = patched(original, response)
    assert result["metadata"]["labels"][c.LABEL_GROUP_INDEX] == "1"
    assert result["spec"]["containers"][0]["env"][0]["name"] == c.ENV_LWS_LEADER_ADDRESS


def test_pod_mutation_error_is_a_denial() -> None:
    original = leader("leader").obj()
    response = review(c.WEBHOOK_PATH_MUTATE_POD, request(original))["response"]
    assert (response["allowed"], response["status"]["code"]) == (False, 403)
    assert response["status"]["message"] == "parsing pod ordinal for pod leader"


def test_pod_validation_admits() -> None:
    response = review(c.WEBHOOK_PATH_VALIDATE_POD, request(leader().obj(), "UPDATE", leader().obj()))[
        "response"
    ]
    assert response["allowed"] is True


def test_ds_warnings_are_returned_with_an_allowed_response() -> None:
    subject = ds(
        "ds", {**ds_role("prefill", 3), "scaling": {"mode": c.ROLE_SCALING_EXTERNAL}}, ds_role("decode")
    )
    response = review(c.WEBHOOK_PATH_VALIDATE_DS, request(subject))["response"]
    assert response["allowed"] is True
    assert len(response["warnings"]) == 1


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        pytest.param(c.WEBHOOK_PATH_VALIDATE_LWS, request(None), 400, id="missing object"),
        pytest.param(c.WEBHOOK_PATH_VALIDATE_LWS, {"kind": "AdmissionReview"}, 400, id="missing request"),
        pytest.param(c.WEBHOOK_PATH_VALIDATE_LWS, "not json object", 400, id="not an object"),
        pytest.param(
            c.WEBHOOK_PATH_VALIDATE_LWS, request(lws().obj(), "UPDATE"), 400, id="update without old"
        ),
        pytest.param("/nowhere", request(lws().obj()), 404, id="unknown path"),
        # Found by the chaos fuzzer (tests/chaos/input): these raised inside the handler (HTTP 500).
        pytest.param(
            c.WEBHOOK_PATH_MUTATE_POD,
            request({**leader().obj(), "metadata": "x"}),
            400,
            id="pod metadata string",
        ),
        pytest.param(
            c.WEBHOOK_PATH_MUTATE_POD, request(_with_meta("labels", -1)), 400, id="pod labels number"
        ),
        pytest.param(
            c.WEBHOOK_PATH_MUTATE_POD,
            request(_with_meta("annotations", ["x"])),
            400,
            id="pod annotations list",
        ),
        pytest.param(
            c.WEBHOOK_PATH_MUTATE_POD,
            request(_with_meta("annotations", {c.ANNOTATION_SIZE: 0})),
            400,
            id="pod size annotation number",
        ),
        pytest.param(
            c.WEBHOOK_PATH_MUTATE_POD,
            request({**leader().obj(), "spec": {"containers": "x"}}),
            400,
            id="pod containers string",
        ),
        pytest.param(
            c.WEBHOOK_PATH_MUTATE_POD,
            request({**leader().obj(), "spec": {"containers": [{"name": "c", "resources": "x"}]}}),
            400,
            id="container resources string",
        ),
        pytest.param(
            c.WEBHOOK_PATH_VALIDATE_LWS,
            {**request(lws().obj()), "apiVersion": "admission.k8s.io/v2"},
            400,
            id="unknown review version",
        ),
        pytest.param(
            c.WEBHOOK_PATH_VALIDATE_LWS, {**request(lws().obj()), "apiVersion": {}}, 400, id="version object"
        ),
        pytest.param(
            c.WEBHOOK_PATH_VALIDATE_LWS, {**request(lws().obj()), "kind": "Pod"}, 400, id="wrong kind"
        ),
        pytest.param(c.WEBHOOK_PATH_MUTATE_LWS, request(_nested(5000)), 400, id="nested too deeply"),
    ],
)
def test_malformed_reviews_are_answered_not_raised(path: str, body: Any, code: int) -> None:
    response = review(path, body)["response"]
    assert response["status"]["message"]
    assert (response["allowed"], response["status"]["code"]) == (False, code)
