"""In-place group restart in admission: the LWS webhook refuses InPlace where the cluster cannot restart
all containers (naming the annotation and the field), and the pod webhook equips new pods of an InPlace
set only."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.webhooks.admission import WebhookOptions, review
from leaderworkerset.webhooks.inplacerestart import kept_rule
from tests.support.builders import leader, lws, worker
from tests.unit.webhooks.test_admission import patched, request

Obj = dict[str, Any]
UNSUPPORTED = "the API server drops container restart rules"


def _in_place(value: str = inplacerestart.IN_PLACE) -> Obj:
    return (
        lws()
        .restart_policy(c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART)
        .annotation(ext.ANNOTATION_RESTART_STRATEGY, value)
        .obj()
    )


def _validate(obj: Obj, support: str | None, old: Obj | None = None) -> Obj:
    options = WebhookOptions(restart_all_containers=lambda: support)
    operation = "UPDATE" if old is not None else "CREATE"
    response: Obj = review(c.WEBHOOK_PATH_VALIDATE_LWS, request(obj, operation, old), options)["response"]
    return response


def test_in_place_is_admitted_where_supported() -> None:
    assert _validate(_in_place(), None)["allowed"] is True


def test_in_place_is_refused_where_unsupported_naming_the_annotation_and_the_field() -> None:
    response = _validate(_in_place(), UNSUPPORTED)
    message = response["status"]["message"]
    assert response["allowed"] is False
    assert f'metadata.annotations.{ext.ANNOTATION_RESTART_STRATEGY}: Invalid value: "InPlace"' in message
    assert "RestartAllContainers (spec.containers[*].restartPolicyRules[*].action)" in message
    assert UNSUPPORTED in message


def test_an_update_of_an_admitted_in_place_set_is_not_refused() -> None:
    old = _in_place()
    new = _in_place()
    new["spec"]["replicas"] = 5
    assert _validate(new, UNSUPPORTED, old)["allowed"] is True
    assert _validate(new, UNSUPPORTED, lws().obj())["allowed"] is False  # newly added: refused


@pytest.mark.parametrize(
    ("value", "policy", "want"),
    [
        pytest.param(
            "inplace", c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART, "must be 'InPlace'", id="value"
        ),
        pytest.param("InPlace", "None", "needs spec.leaderWorkerTemplate.restartPolicy", id="policy"),
    ],
)
def test_a_bad_value_is_refused_by_the_set_annotation_rule(value: str, policy: str, want: str) -> None:
    obj = lws().restart_policy(policy).annotation(ext.ANNOTATION_RESTART_STRATEGY, value).obj()
    response = _validate(obj, None)
    assert response["allowed"] is False
    assert want in response["status"]["message"]


def test_a_set_without_the_annotation_is_never_asked_about() -> None:
    def never() -> str | None:
        raise AssertionError("asked")

    options = WebhookOptions(restart_all_containers=never)
    assert review(c.WEBHOOK_PATH_VALIDATE_LWS, request(lws().obj()), options)["response"]["allowed"] is True


@pytest.mark.parametrize(
    ("annotations", "image", "equipped"),
    [
        pytest.param({ext.ANNOTATION_RESTART_STRATEGY: "InPlace"}, "lws:v1", True, id="InPlace set"),
        pytest.param({}, "lws:v1", False, id="set without the annotation"),
        pytest.param(
            {ext.ANNOTATION_RESTART_STRATEGY: "InPlace"}, None, False, id="no agent image configured"
        ),
    ],
)
@pytest.mark.parametrize("role", ["leader", "worker"])
def test_the_pod_webhook_equips_pods_of_in_place_sets(
    annotations: dict[str, str], image: str | None, equipped: bool, role: str
) -> None:
    original = (leader() if role == "leader" else worker("test-sample-1-1")).obj()
    asked: list[tuple[str, str]] = []

    def view(namespace: str, name: str) -> dict[str, str]:
        asked.append((namespace, name))
        return annotations

    body = request(original)
    body["request"]["namespace"] = "team-a"
    options = WebhookOptions(token_source=lambda: "t", set_annotations=view, restart_agent_image=image)
    result = patched(original, review(c.WEBHOOK_PATH_MUTATE_POD, body, options)["response"])
    assert inplacerestart.equipped(result) is equipped
    assert asked == ([("team-a", "test-sample")] if image else [])
    init = [ctr["name"] for ctr in result["spec"].get("initContainers") or []]
    assert (inplacerestart.AGENT_CONTAINER in init) is equipped
    assert result["metadata"]["labels"][c.LABEL_SET_NAME] == "test-sample"  # the usual mutation too


def test_kept_rule_reads_the_dry_run_answer() -> None:
    container = {"name": "a"}
    inplacerestart.equip_pod({"spec": {"containers": [container]}}, "img")
    kept = {"spec": {"template": {"spec": {"containers": [container]}}}}
    dropped = {"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}
    assert kept_rule(kept) is True
    assert kept_rule(dropped) is False


@pytest.mark.parametrize(
    ("support", "equipped"),
    [
        pytest.param(None, True, id="the cluster keeps the rule"),
        pytest.param(UNSUPPORTED, False, id="the cluster drops or refuses it"),
        pytest.param("the API server has not been asked yet", False, id="not known yet"),
    ],
)
def test_the_pod_webhook_equips_pods_only_where_the_cluster_keeps_the_restart_rule(
    support: str | None, equipped: bool
) -> None:
    """A set admitted before the cluster lost the rule still asks for it; its new pods get none of
    it (the API server would refuse or strip it), and the set's condition says why."""
    original = worker("test-sample-1-1").obj()
    options = WebhookOptions(
        token_source=lambda: "t",
        set_annotations=lambda namespace, name: {ext.ANNOTATION_RESTART_STRATEGY: inplacerestart.IN_PLACE},
        restart_agent_image="lws:v1",
        restart_all_containers=lambda: support,
    )
    result = patched(original, review(c.WEBHOOK_PATH_MUTATE_POD, request(original), options)["response"])
    assert inplacerestart.equipped(result) is equipped
    assert all("restartPolicyRules" not in ctr for ctr in result["spec"]["containers"]) is not equipped
