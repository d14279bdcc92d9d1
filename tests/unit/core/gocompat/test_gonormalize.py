"""Go's decode-then-encode of templates, driven by the generated gofields table."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.core.gocompat.gonormalize import GoDecodeError, go_table, normalize


def test_table_is_generated_from_k8s_api_037() -> None:
    table = go_table()
    assert set(table.roots) >= {"LeaderWorkerTemplate", "NetworkConfig", "PodTemplateSpec"}
    container = table.structs["k8s.io/api/core/v1.Container"]
    name = next(field for field in container if field.json == "name")
    assert not name.omitempty  # `json:"name"`: an empty name is still written
    meta = table.structs["k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"]
    created = next(field for field in meta if field.json == "creationTimestamp")
    assert created.omitzero  # k8s >= 1.35: the zero timestamp disappears instead of being null


def pod(spec: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": spec}
    if metadata is not None:
        template["metadata"] = metadata
    return template


@pytest.mark.parametrize(
    ("template", "want"),
    [
        pytest.param(
            pod({"containers": [{"name": "c"}]}),
            {"metadata": {}, "spec": {"containers": [{"name": "c", "resources": {}}]}},
            id="empty structs without omitempty are written",
        ),
        pytest.param(
            pod({"containers": [{}]}),
            {"metadata": {}, "spec": {"containers": [{"name": "", "resources": {}}]}},
            id="zero string without omitempty is written",
        ),
        pytest.param(
            pod({}),
            {"metadata": {}, "spec": {"containers": None}},
            id="absent slice without omitempty is null",
        ),
        pytest.param(
            pod({"containers": [], "volumes": [], "nodeSelector": {}}),
            {"metadata": {}, "spec": {"containers": []}},
            id="empty slices and maps with omitempty vanish, without it stay",
        ),
        pytest.param(
            pod({"containers": None, "hostNetwork": False, "priority": 0, "runtimeClassName": None}),
            {"metadata": {}, "spec": {"containers": None, "priority": 0}},
            id="false and nil pointers vanish, a pointer to 0 stays",
        ),
        pytest.param(
            pod({"containers": []}, {"creationTimestamp": None}),
            {"metadata": {}, "spec": {"containers": []}},
            id="zero creationTimestamp is omitted",
        ),
        pytest.param(
            pod({"containers": []}, {"creationTimestamp": "2024-05-06T07:08:09.5-01:30"}),
            {"metadata": {"creationTimestamp": "2024-05-06T08:38:09Z"}, "spec": {"containers": []}},
            id="timestamps in UTC to the second",
        ),
        pytest.param(
            pod({"containers": [], "unknown": 1}, {"labels": {"a": "b"}, "bogus": True}),
            {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}},
            id="unknown fields dropped",
        ),
        pytest.param(
            pod({"containers": [{"name": "c", "resources": {"limits": {"cpu": "1000m", "memory": None}}}]}),
            {
                "metadata": {},
                "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "0"}}}]},
            },
            id="quantities canonical, null quantity is zero",
        ),
        pytest.param(
            pod({"containers": [{"name": "c", "livenessProbe": {"httpGet": {"port": "http"}}}]}),
            {
                "metadata": {},
                "spec": {
                    "containers": [
                        {"name": "c", "resources": {}, "livenessProbe": {"httpGet": {"port": "http"}}}
                    ]
                },
            },
            id="int-or-string keeps a string",
        ),
        pytest.param(
            pod({"containers": [{"name": "c", "livenessProbe": {"tcpSocket": {}}}]}),
            {
                "metadata": {},
                "spec": {
                    "containers": [
                        {"name": "c", "resources": {}, "livenessProbe": {"tcpSocket": {"port": 0}}}
                    ]
                },
            },
            id="zero int-or-string is the number 0",
        ),
        pytest.param(
            pod({"containers": [], "volumes": [{"name": "v", "emptyDir": {}}]}),
            {"metadata": {}, "spec": {"containers": [], "volumes": [{"name": "v", "emptyDir": {}}]}},
            id="embedded volume source is flattened",
        ),
    ],
)
def test_pod_template(template: dict[str, Any], want: dict[str, Any]) -> None:
    assert normalize(template, "PodTemplateSpec") == want


@pytest.mark.parametrize(
    ("network_config", "want"),
    [
        pytest.param({}, {"subdomainPolicy": None}, id="pointer without omitempty is null"),
        pytest.param({"subdomainPolicy": "Shared"}, {"subdomainPolicy": "Shared"}, id="set"),
    ],
)
def test_network_config(network_config: dict[str, Any], want: dict[str, Any]) -> None:
    assert normalize(network_config, "NetworkConfig") == want


def test_v1_only_template_field_is_kept() -> None:
    lwt = normalize(
        {"workerTemplate": {"spec": {"containers": []}}, "maxGroupRestarts": 0}, "LeaderWorkerTemplate"
    )
    assert lwt["maxGroupRestarts"] == 0  # a set pointer to 0 is not empty


@pytest.mark.parametrize(
    ("template", "where"),
    [
        pytest.param(pod({"containers": "x"}), "spec.containers", id="string for a list"),
        pytest.param(pod({"containers": [], "priority": 1.5}), "spec.priority", id="float for an int"),
        pytest.param(pod({"containers": [], "priority": 2**31}), "spec.priority", id="int32 overflow"),
        pytest.param(
            pod({"containers": [], "hostNetwork": "true"}), "spec.hostNetwork", id="string for a bool"
        ),
        pytest.param(pod({"containers": [{"name": 1}]}), "spec.containers[0].name", id="number for a string"),
        pytest.param(
            pod({"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]}),
            "resources.limits[cpu]",
            id="invalid quantity",
        ),
        pytest.param(
            pod({"containers": []}, {"creationTimestamp": "yesterday"}),
            "creationTimestamp",
            id="invalid time",
        ),
        pytest.param(
            pod({"containers": [{"name": "c", "livenessProbe": {"tcpSocket": {"port": 80.5}}}]}),
            "tcpSocket.port",
            id="fractional int-or-string",
        ),
    ],
)
def test_rejects_what_go_cannot_decode(template: dict[str, Any], where: str) -> None:
    with pytest.raises(GoDecodeError, match=where.replace("[", r"\[").replace("]", r"\]")):
        normalize(template, "PodTemplateSpec")
