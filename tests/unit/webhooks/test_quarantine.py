"""Node quarantine in admission: the LWS webhook refuses a bad quarantine annotation naming it and the
rule; the pod webhook keeps a set's new pods off the nodes its view says the set quarantines."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.desired.affinity import NODE_NAME_FIELD
from leaderworkerset.core.quarantine.decision import Quarantine, encode_state
from leaderworkerset.runtime.listwatch import ListerWatcher
from leaderworkerset.runtime.projections import METADATA_CODEC, MetadataOnly
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.store import Store
from leaderworkerset.webhooks.admission import WebhookOptions, review
from leaderworkerset.webhooks.leaderworkerset import validate_create, validate_update
from leaderworkerset.webhooks.quarantine import QuarantineView
from tests.support.builders import leader, lws, worker
from tests.unit.webhooks.test_admission import patched, request

Obj = dict[str, Any]
AFTER, COOLDOWN = ext.ANNOTATION_QUARANTINE_AFTER, ext.ANNOTATION_QUARANTINE_COOLDOWN
MODE = ext.ANNOTATION_QUARANTINE_MODE


@dataclass(frozen=True)
class Case:
    annotations: dict[str, str]
    want: tuple[str, ...] = ()  # the annotations named by the errors


CASES = [
    pytest.param(Case({}), id="no annotation: admitted as upstream"),
    pytest.param(Case({AFTER: "3/10m"}), id="the documented example"),
    pytest.param(Case({AFTER: "3/10m", COOLDOWN: "30m"}), id="with a cool-down"),
    pytest.param(Case({AFTER: "3"}, (AFTER,)), id="no window"),
    pytest.param(Case({AFTER: "0/1m"}, (AFTER,)), id="zero failures"),
    pytest.param(Case({AFTER: "3/10m", COOLDOWN: "-1s"}, (COOLDOWN,)), id="negative cool-down"),
    pytest.param(Case({COOLDOWN: "1m"}, (COOLDOWN,)), id="a cool-down alone"),
    pytest.param(Case({AFTER: "3/10m", MODE: "Taint"}), id="taint mode"),
    pytest.param(Case({AFTER: "3/10m", MODE: "Cordon"}, (MODE,)), id="an unknown mode"),
]


def test_table_size() -> None:
    assert len(CASES) == 9


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("operation", ["create", "update"])
def test_quarantine_annotations_are_validated(case: Case, operation: str) -> None:
    obj = lws().annotations(case.annotations).obj()
    errors = validate_create(obj) if operation == "create" else validate_update(lws().obj(), obj)
    assert tuple(err.field.removeprefix("metadata.annotations.") for err in errors) == case.want
    for err in errors:
        text = err.error()
        key = err.field.removeprefix("metadata.annotations.")
        assert text.startswith(f'metadata.annotations.{key}: Invalid value: "{case.annotations[key]}"'), text


def _required_terms(pod: Obj) -> list[Obj]:
    affinity = pod["spec"].get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return list(required.get("nodeSelectorTerms") or [])


def _avoid(*nodes: str) -> Obj:
    return {"key": NODE_NAME_FIELD, "operator": "NotIn", "values": sorted(nodes)}


USER_TERM = {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}


@pytest.mark.parametrize(
    ("quarantined", "user_terms", "want_terms"),
    [
        pytest.param(frozenset(), None, [], id="nothing quarantined: the pod is left alone"),
        pytest.param(frozenset({"n2", "n1"}), None, [{"matchFields": [_avoid("n1", "n2")]}], id="one term"),
        pytest.param(
            frozenset({"n1"}),
            [
                USER_TERM,
                {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": ["n1", "n3"]}]},
            ],
            [
                {**USER_TERM, "matchFields": [_avoid("n1")]},
                {
                    "matchFields": [
                        {"key": NODE_NAME_FIELD, "operator": "In", "values": ["n1", "n3"]},
                        _avoid("n1"),
                    ]
                },
            ],
            id="the user's terms are ORed: each one excludes the node",
        ),
    ],
)
@pytest.mark.parametrize("role", ["leader", "worker"])
def test_the_pod_webhook_keeps_new_pods_off_quarantined_nodes(
    quarantined: frozenset[str], user_terms: list[Obj] | None, want_terms: list[Obj], role: str
) -> None:
    original = (leader() if role == "leader" else worker("test-sample-1-1")).obj()
    if user_terms is not None:
        original["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": user_terms}
            }
        }
        want_terms = want_terms or user_terms
    asked: list[tuple[str, str]] = []

    def view(namespace: str, name: str) -> frozenset[str]:
        asked.append((namespace, name))
        return quarantined

    body = request(original)
    body["request"]["namespace"] = "team-a"
    options = WebhookOptions(token_source=lambda: "t", quarantined_nodes=view)
    response = review(c.WEBHOOK_PATH_MUTATE_POD, body, options)["response"]
    result = patched(original, response)
    assert asked == [("team-a", "test-sample")]
    assert _required_terms(result) == want_terms
    assert result["metadata"]["labels"][c.LABEL_SET_NAME] == "test-sample"  # the usual mutation too


class _NoServer:
    async def list_page(self, limit: int, continue_token: str | None) -> bytes:
        raise AssertionError("not listed in a unit test")

    def watch(self, resource_version: str, timeout_seconds: int) -> Any:
        raise AssertionError("not watched in a unit test")


def test_the_view_answers_from_its_cache_with_the_quarantines_in_force() -> None:
    now = datetime.datetime(2026, 12, 4, 4, 0, tzinfo=datetime.UTC)

    def stamp(minutes: int) -> str:
        return (now + datetime.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    state = encode_state([Quarantine("n1", stamp(-5), stamp(5)), Quarantine("n2", stamp(-10), stamp(-1))])
    assert state is not None
    lister: ListerWatcher = _NoServer()
    store: Store[MetadataOnly] = Store(METADATA_CODEC)
    view = QuarantineView(Informer("lws", lister, store), clock=now.timestamp)
    for name, held in (("quarantining", {ext.ANNOTATION_QUARANTINED_NODES: state}), ("plain", {})):
        doc = {"metadata": {"namespace": "ns", "name": name, "annotations": held}}
        store.upsert(METADATA_CODEC.decode_object(json.dumps(doc).encode()))
    assert view("ns", "quarantining") == {"n1"}  # n2's cool-down is over
    assert view("ns", "plain") == frozenset()
    assert view("ns", "unknown") == frozenset()
    assert view("other", "quarantining") == frozenset()
