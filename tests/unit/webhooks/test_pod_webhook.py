"""Pod mutating webhook, mirroring upstream's pod webhook integration cases."""

from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired.affinity import exclusive_affinity_applied, set_exclusive_affinities
from leaderworkerset.core.desired.podmutation import PodMutationError
from leaderworkerset.core.groups import keys
from leaderworkerset.webhooks.pod import (
    default_pod,
    validate_pod,
    volcano_pod_group_injector,
    workload_pod_group_injector,
)
from tests.support.builders import leader, pod, tpu_container, tpu_pod_spec, worker

Obj = dict[str, Any]
TOKEN = "abcdefghjklmnpqr"
TPU_ENV = (c.ENV_TPU_WORKER_HOSTNAMES, c.ENV_TPU_WORKER_ID, c.ENV_TPU_NAME, c.ENV_TPU_PROCESS_ADDRESSES)


def mutate(subject: Obj, **kwargs: Any) -> Obj:
    return default_pod(subject, token_source=lambda: TOKEN, **kwargs)


def env_of(subject: Obj, index: int = 0, kind: str = "containers") -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in subject["spec"][kind][index].get("env", [])}


def env_names(subject: Obj, index: int = 0, kind: str = "containers") -> list[str]:
    return [e["name"] for e in subject["spec"][kind][index].get("env", [])]


def has_tpu_env(subject: Obj) -> bool:
    containers = [*subject["spec"].get("containers", []), *subject["spec"].get("initContainers", [])]
    return any(e["name"] in TPU_ENV for ctr in containers for e in ctr.get("env", []))


def sha(text: str) -> str:
    return keys.sha1_hex(text)


@dataclass(frozen=True)
class LabelCase:
    pod: Obj
    want_labels: dict[str, str]


LABEL_CASES = [
    pytest.param(
        LabelCase(
            pod("randompod").labels(**{"random-label": "random-value"}).obj(),
            {"random-label": "random-value"},
        ),
        id="not leaderworkerset pods should have no effect",
    ),
    pytest.param(
        LabelCase(
            worker("test-sample-1-3").obj(),
            {c.LABEL_SET_NAME: "test-sample", c.LABEL_GROUP_INDEX: "1", c.LABEL_WORKER_INDEX: "3"},
        ),
        id="worker index label is populated for worker pods",
    ),
    pytest.param(
        LabelCase(
            leader().obj(),
            {
                c.LABEL_SET_NAME: "test-sample",
                c.LABEL_WORKER_INDEX: "0",
                c.LABEL_GROUP_INDEX: "1",
                c.LABEL_GROUP_KEY: sha("default/test-sample-1"),
            },
        ),
        id="leader gets group index and group key",
    ),
    pytest.param(
        LabelCase(
            leader("test-1", "test", "5")
            .leader_requests_tpus()
            .subgroup_size("4")
            .spec(tpu_pod_spec())
            .obj(),
            {
                c.LABEL_SET_NAME: "test",
                c.LABEL_WORKER_INDEX: "0",
                c.LABEL_GROUP_INDEX: "1",
                c.LABEL_GROUP_KEY: sha("default/test-1"),
                c.LABEL_SUBGROUP_INDEX: "0",
                c.LABEL_SUBGROUP_KEY: sha("test-1/0"),
            },
        ),
        id="leader requests TPUs, subgroup labels populated in leader",
    ),
    pytest.param(
        LabelCase(
            worker("test-1-3", "1", "test", "4")
            .worker_index("3")
            .leader_requests_tpus()
            .subgroup_size("2")
            .annotation(c.ANNOTATION_LEADER_NAME, "test-1")
            .obj(),
            {
                c.LABEL_SET_NAME: "test",
                c.LABEL_WORKER_INDEX: "3",
                c.LABEL_GROUP_INDEX: "1",
                c.LABEL_SUBGROUP_INDEX: "1",
                c.LABEL_SUBGROUP_KEY: sha("test-1/1"),
            },
        ),
        id="leader requests TPUs, subgroup labels in worker populated",
    ),
    pytest.param(
        LabelCase(
            worker("test-1-4", "1", "test", "5")
            .worker_index("4")
            .subgroup_size("2")
            .annotation(c.ANNOTATION_LEADER_NAME, "test-1")
            .spec(tpu_pod_spec())
            .obj(),
            {
                c.LABEL_SET_NAME: "test",
                c.LABEL_WORKER_INDEX: "4",
                c.LABEL_GROUP_INDEX: "1",
                c.LABEL_SUBGROUP_INDEX: "1",
                c.LABEL_SUBGROUP_KEY: sha("test-1/1"),
            },
        ),
        id="leader without TPUs, subgroup labels in worker populated",
    ),
    pytest.param(
        LabelCase(
            leader(size="9")
            .subgroup_size("4")
            .annotation(c.ANNOTATION_SUBGROUP_POLICY_TYPE, "LeaderExcluded")
            .obj(),
            {
                c.LABEL_SET_NAME: "test-sample",
                c.LABEL_WORKER_INDEX: "0",
                c.LABEL_GROUP_INDEX: "1",
                c.LABEL_GROUP_KEY: sha("default/test-sample-1"),
            },
        ),
        id="LeaderExcluded leader gets no subgroup",
    ),
    pytest.param(
        LabelCase(
            worker("test-sample-1-2").subgroup_size("2").label(c.LABEL_SUBGROUP_INDEX, "7").obj(),
            {
                c.LABEL_SET_NAME: "test-sample",
                c.LABEL_GROUP_INDEX: "1",
                c.LABEL_WORKER_INDEX: "2",
                c.LABEL_SUBGROUP_INDEX: "7",
            },
        ),
        id="a preset subgroup index is kept",
    ),
]


@pytest.mark.parametrize("case", LABEL_CASES)
def test_labels(case: LabelCase) -> None:
    assert mutate(case.pod)["metadata"]["labels"] == case.want_labels


@dataclass(frozen=True)
class TPUCase:
    pod: Obj
    want_hostnames: str | None
    want_leader_address: str | None = None


TPU_CASES = [
    pytest.param(
        TPUCase(pod("test-sample-1").worker_index("0").size("4").spec(tpu_pod_spec()).obj(), None),
        id="pod requesting TPUs outside any LWS gets nothing",
    ),
    pytest.param(TPUCase(leader().obj(), None), id="leader not requesting TPUs gets no TPU env"),
    pytest.param(
        TPUCase(worker("test-sample-1-1").obj(), None), id="worker not requesting TPUs gets no TPU env"
    ),
    pytest.param(
        TPUCase(
            leader(size="5").spec(tpu_pod_spec()).obj(),
            "test-sample-1.default,test-sample-1-1.default,test-sample-1-2.default,"
            "test-sample-1-3.default,test-sample-1-4.default",
        ),
        id="leader in size 5 group",
    ),
    pytest.param(
        TPUCase(
            leader(size="5")
            .annotation(c.ANNOTATION_SUBDOMAIN_POLICY, c.SUBDOMAIN_UNIQUE_PER_REPLICA)
            .spec(tpu_pod_spec())
            .obj(),
            "test-sample-1.test-sample-1,test-sample-1-1.test-sample-1,test-sample-1-2.test-sample-1,"
            "test-sample-1-3.test-sample-1,test-sample-1-4.test-sample-1",
            "test-sample-1.test-sample-1.default",
        ),
        id="UniquePerReplica leader uses its own name as subdomain",
    ),
    pytest.param(
        TPUCase(
            leader(size="5").subgroup_size("5").spec(tpu_pod_spec()).obj(),
            "test-sample-1.default,test-sample-1-1.default,test-sample-1-2.default,"
            "test-sample-1-3.default,test-sample-1-4.default",
        ),
        id="leader with subgroup size 5",
    ),
    pytest.param(
        TPUCase(
            worker("test-sample-1-3", size="5").leader_requests_tpus().spec(tpu_pod_spec()).obj(),
            "test-sample-1.default,test-sample-1-1.default,test-sample-1-2.default,"
            "test-sample-1-3.default,test-sample-1-4.default",
        ),
        id="worker requesting TPUs, leader too",
    ),
    pytest.param(
        TPUCase(
            worker("test-sample-1-3", size="10")
            .leader_requests_tpus()
            .subgroup_size("5")
            .spec(tpu_pod_spec())
            .obj(),
            "test-sample-1.default,test-sample-1-1.default,test-sample-1-2.default,"
            "test-sample-1-3.default,test-sample-1-4.default",
        ),
        id="worker requesting TPUs with subgroups, leader too",
    ),
    pytest.param(
        TPUCase(
            worker("test-sample-1-3", size="5").spec(tpu_pod_spec()).obj(),
            "test-sample-1-1.default,test-sample-1-2.default,test-sample-1-3.default,test-sample-1-4.default",
        ),
        id="worker requesting TPUs, leader does not",
    ),
    pytest.param(
        TPUCase(
            worker("test-sample-1-7", size="11").subgroup_size("5").spec(tpu_pod_spec()).obj(),
            "test-sample-1-6.default,test-sample-1-7.default,test-sample-1-8.default,"
            "test-sample-1-9.default,test-sample-1-10.default",
        ),
        id="worker requesting TPUs with subgroups, leader does not",
    ),
    pytest.param(
        TPUCase(
            worker("test-sample-1-1", size="2").leader_requests_tpus().spec(tpu_pod_spec()).obj(),
            "test-sample-1.default,test-sample-1-1.default",
        ),
        id="worker in size 2 group",
    ),
    pytest.param(
        TPUCase(leader(size="1").spec(tpu_pod_spec()).obj(), "test-sample-1.default"),
        id="leader in size 1 group",
    ),
    pytest.param(
        TPUCase(
            leader(size="1")
            .spec({"containers": [tpu_container("tpu"), {"name": "sidecar"}], "subdomain": "default"})
            .obj(),
            "test-sample-1.default",
        ),
        id="multiple containers, only some requesting TPUs",
    ),
]


@pytest.mark.parametrize("case", TPU_CASES)
def test_tpu_env(case: TPUCase) -> None:
    got = mutate(case.pod)
    if case.want_hostnames is None:
        assert not has_tpu_env(got)
        return
    assert env_of(got)[c.ENV_TPU_WORKER_HOSTNAMES] == case.want_hostnames
    if case.want_leader_address is not None:
        assert env_of(got)[c.ENV_LWS_LEADER_ADDRESS] == case.want_leader_address


def test_sidecar_without_tpus_gets_only_lws_env() -> None:
    subject = (
        leader(size="1")
        .spec({"containers": [tpu_container("tpu"), {"name": "sidecar"}], "subdomain": "d"})
        .obj()
    )
    assert env_names(mutate(subject), 1) == [
        c.ENV_LWS_LEADER_ADDRESS,
        c.ENV_LWS_GROUP_SIZE,
        c.ENV_LWS_WORKER_INDEX,
    ]


def exclusive_terms(label_key: str, key: str, topology_key: str) -> tuple[Obj, Obj]:
    return (
        {
            "labelSelector": {"matchExpressions": [{"key": label_key, "operator": "In", "values": [key]}]},
            "topologyKey": topology_key,
        },
        {
            "labelSelector": {
                "matchExpressions": [
                    {"key": label_key, "operator": "Exists"},
                    {"key": label_key, "operator": "NotIn", "values": [key]},
                ]
            },
            "topologyKey": topology_key,
        },
    )


def required_terms(subject: Obj, kind: str) -> list[Obj]:
    terms: list[Obj] = subject["spec"]["affinity"][kind]["requiredDuringSchedulingIgnoredDuringExecution"]
    return terms


def test_leader_exclusive_placement_terms() -> None:
    got = mutate(leader().annotation(c.ANNOTATION_EXCLUSIVE_TOPOLOGY, "topologyKey").obj())
    affinity, anti = exclusive_terms(c.LABEL_GROUP_KEY, sha("default/test-sample-1"), "topologyKey")
    assert required_terms(got, "podAffinity") == [affinity]
    assert required_terms(got, "podAntiAffinity") == [anti]


def test_leader_with_group_and_subgroup_exclusive_placement_has_both_pairs() -> None:
    subject = (
        leader()
        .annotation(c.ANNOTATION_EXCLUSIVE_TOPOLOGY, "topologyKey")
        .annotation(c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY, "topologyKey-2")
        .subgroup_size("2")
        .obj()
    )
    got = mutate(subject)
    group = exclusive_terms(c.LABEL_GROUP_KEY, sha("default/test-sample-1"), "topologyKey")
    sub = exclusive_terms(c.LABEL_SUBGROUP_KEY, sha("test-sample-1/0"), "topologyKey-2")
    assert required_terms(got, "podAffinity") == [group[0], sub[0]]
    assert required_terms(got, "podAntiAffinity") == [group[1], sub[1]]


def test_worker_gets_only_subgroup_exclusive_placement() -> None:
    subject = (
        worker("test-sample-1-1")
        .annotation(c.ANNOTATION_EXCLUSIVE_TOPOLOGY, "topologyKey")
        .annotation(c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY, "topologyKey-2")
        .annotation(c.ANNOTATION_LEADER_NAME, "test-sample-1")
        .subgroup_size("2")
        .obj()
    )
    got = mutate(subject)
    affinity, anti = exclusive_terms(c.LABEL_SUBGROUP_KEY, sha("test-sample-1/0"), "topologyKey-2")
    assert required_terms(got, "podAffinity") == [affinity]
    assert required_terms(got, "podAntiAffinity") == [anti]


def test_leader_without_exclusive_annotation_has_no_affinity() -> None:
    assert "affinity" not in mutate(leader().obj())["spec"]


def test_exclusive_terms_are_not_applied_twice() -> None:
    subject = leader().annotation(c.ANNOTATION_EXCLUSIVE_TOPOLOGY, "topologyKey").obj()
    set_exclusive_affinities(subject["spec"], "uniquehash", "topologyKey", c.LABEL_GROUP_KEY)
    got = mutate(subject)
    assert len(required_terms(got, "podAffinity")) == 1
    assert required_terms(got, "podAffinity")[0]["labelSelector"]["matchExpressions"][0]["values"] == [
        "uniquehash"
    ]


def test_exclusive_terms_keep_user_terms_first() -> None:
    subject = leader().annotation(c.ANNOTATION_EXCLUSIVE_TOPOLOGY, "topologyKey").obj()
    user_affinity, user_anti = exclusive_terms("key", "value", "topology")
    subject["spec"]["affinity"] = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [user_affinity]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [user_anti]},
    }
    got = mutate(subject)
    ours = exclusive_terms(c.LABEL_GROUP_KEY, sha("default/test-sample-1"), "topologyKey")
    assert required_terms(got, "podAffinity") == [user_affinity, ours[0]]
    assert required_terms(got, "podAntiAffinity") == [user_anti, ours[1]]


@pytest.mark.parametrize(
    ("affinity", "want"),
    [
        pytest.param({"podAffinity": {}, "podAntiAffinity": {}}, False, id="empty sections"),
        pytest.param(
            {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "t"}]}},
            False,
            id="affinity without anti-affinity",
        ),
        pytest.param(
            {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "t"}]}},
            False,
            id="anti-affinity without affinity",
        ),
        pytest.param(
            {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "t1"}]},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "t"}]},
            },
            False,
            id="topology key mismatch",
        ),
        pytest.param(
            {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "t"}]},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "t"}]},
            },
            True,
            id="both present",
        ),
    ],
)
def test_exclusive_affinity_applied(affinity: Obj, want: bool) -> None:
    assert exclusive_affinity_applied({"affinity": affinity}, "t") is want


def test_lws_env_goes_first_in_every_container_and_replaces_user_values() -> None:
    spec = {
        "initContainers": [{"name": "init", "env": [{"name": "A", "value": "1"}]}],
        "containers": [
            {
                "name": "main",
                "env": [
                    {"name": "B", "value": "$(LWS_LEADER_ADDRESS)"},
                    {"name": c.ENV_LWS_GROUP_SIZE, "value": "user"},
                    {"name": "B", "value": "dup"},
                ],
            }
        ],
        "subdomain": "test-sample",
    }
    got = mutate(worker("test-sample-1-1", size="2").spec(spec).obj())
    want_front = [
        {"name": c.ENV_LWS_LEADER_ADDRESS, "value": "test-sample-1.test-sample.default"},
        {"name": c.ENV_LWS_GROUP_SIZE, "value": "2"},
        {"name": c.ENV_LWS_WORKER_INDEX, "value": "1"},
    ]
    assert got["spec"]["containers"][0]["env"] == [
        *want_front,
        {"name": "B", "value": "$(LWS_LEADER_ADDRESS)"},
    ]
    assert got["spec"]["initContainers"][0]["env"] == [*want_front, {"name": "A", "value": "1"}]


def test_worker_uses_stamped_leader_address() -> None:
    subject = worker("test-sample-1-1").annotation(c.ANNOTATION_LEADER_ADDRESS, "lws-abcd1234.lws.ns").obj()
    assert env_of(mutate(subject))[c.ENV_LWS_LEADER_ADDRESS] == "lws-abcd1234.lws.ns"


def test_hash_leader_gets_random_key_hostname_and_subdomain() -> None:
    subject = (
        pod("lws-5d8f9c7b6-x2x4z")
        .lws_name("lws")
        .worker_index("0")
        .size("2")
        .annotation(c.ANNOTATION_GROUP_IDENTITY, c.GROUP_IDENTITY_HASH)
        .annotation(c.ANNOTATION_SUBDOMAIN_POLICY, c.SUBDOMAIN_UNIQUE_PER_REPLICA)
        .subgroup_size("1")
        .obj()
    )
    got = mutate(subject)
    key = sha(f"default/{TOKEN}")
    labels = got["metadata"]["labels"]
    assert (labels[c.LABEL_GROUP_KEY], labels[c.LABEL_GROUP_INDEX]) == (key, key)
    assert labels[c.LABEL_SUBGROUP_KEY] == sha(f"{key}/0")
    assert got["spec"]["hostname"] == f"lws-{key[:8]}"
    assert got["spec"]["subdomain"] == f"lws-{key[:8]}"
    assert env_of(got)[c.ENV_LWS_LEADER_ADDRESS] == f"lws-{key[:8]}.lws-{key[:8]}.default"


def test_hash_leader_is_admitted_gated_and_cheapest_to_delete() -> None:
    subject = (
        pod("lws-5d8f9c7b6-x2x4z")
        .lws_name("lws")
        .worker_index("0")
        .size("2")
        .annotation(c.ANNOTATION_GROUP_IDENTITY, c.GROUP_IDENTITY_HASH)
        .obj()
    )
    got = mutate(subject)
    assert got["spec"]["schedulingGates"] == [{"name": c.SCHEDULING_GATE_GROUP_REPLACEMENT}]
    assert got["metadata"]["annotations"][c.ANNOTATION_POD_DELETION_COST] == "-100"
    again = mutate(got)  # idempotent: the gate is not added twice
    assert again["spec"]["schedulingGates"] == [{"name": c.SCHEDULING_GATE_GROUP_REPLACEMENT}]


def test_ordinal_and_worker_pods_are_not_gated() -> None:
    leader = pod("test-sample-0").lws_name("test-sample").worker_index("0").size("2").obj()
    worker_pod = (
        worker("lws-5d8f9c7b6-x2x4z-1", group_index="k" * 40, lws_name="lws", size="2")
        .annotation(c.ANNOTATION_GROUP_IDENTITY, c.GROUP_IDENTITY_HASH)
        .obj()
    )
    for subject in (leader, worker_pod):
        got = mutate(subject)
        assert "schedulingGates" not in got["spec"]
        assert c.ANNOTATION_POD_DELETION_COST not in (got["metadata"].get("annotations") or {})


def test_hash_worker_subgroup_key_uses_group_key() -> None:
    subject = (
        worker("lws-5d8f9c7b6-x2x4z-3", group_index="k" * 40, lws_name="lws", size="5")
        .label(c.LABEL_GROUP_KEY, "k" * 40)
        .annotation(c.ANNOTATION_GROUP_IDENTITY, c.GROUP_IDENTITY_HASH)
        .subgroup_size("2")
        .obj()
    )
    got = mutate(subject)
    assert got["metadata"]["labels"][c.LABEL_SUBGROUP_INDEX] == "1"
    assert got["metadata"]["labels"][c.LABEL_SUBGROUP_KEY] == sha("k" * 40 + "/1")


def test_volcano_injector_names_the_pod_group() -> None:
    subject = pod("test-pod-0").lws_name("test").group_index("0").size("2")
    subject.label(c.LABEL_TEMPLATE_REVISION_HASH, "1")
    got = mutate(subject.obj(), pod_group_injector=volcano_pod_group_injector)
    assert got["metadata"]["annotations"][c.ANNOTATION_SCHEDULING_GROUP_NAME] == "test-0-1"
    assert got["metadata"]["labels"][c.LABEL_WORKER_INDEX] == "0"


@pytest.mark.parametrize(
    ("subject", "message"),
    [
        pytest.param(
            pod("test-sample-1").lws_name("test-sample").worker_index("0").obj(),
            "size annotation is unexpectedly missing for pod test-sample-1",
            id="missing size annotation",
        ),
        pytest.param(
            leader(size="two").obj(),
            # Upstream's bare strconv error, prefixed with the annotation and the pod.
            f"annotation {c.ANNOTATION_SIZE} of pod test-sample-1: "
            'strconv.Atoi: parsing "two": invalid syntax',
            id="non-integer size",
        ),
        pytest.param(
            worker("test-sample-1-3").subgroup_size("x").obj(),
            f"annotation {c.ANNOTATION_SUBGROUP_SIZE} of pod test-sample-1-3: "
            'strconv.Atoi: parsing "x": invalid syntax',
            id="non-integer subgroup size",
        ),
        pytest.param(
            leader("leader").obj(), "parsing pod ordinal for pod leader", id="leader without ordinal"
        ),
        pytest.param(
            worker("worker").obj(), "parsing pod ordinal for pod worker", id="worker without ordinal"
        ),
        pytest.param(
            pod("test-sample-1-1").lws_name("test-sample").size("2").obj(),
            "no group index label found for pod test-sample-1-1",
            id="worker without group index",
        ),
    ],
)
def test_rejections(subject: Obj, message: str) -> None:
    with pytest.raises(PodMutationError) as raised:
        mutate(subject)
    assert str(raised.value) == message


def test_input_is_not_modified() -> None:
    subject = leader().obj()
    before = repr(subject)
    mutate(subject)
    assert repr(subject) == before


def test_validating_pod_webhook_admits_everything() -> None:
    assert validate_pod(leader().obj(), leader().obj()) == []


def test_workload_aware_pod_without_provider_is_rejected() -> None:
    subject = leader().annotation(c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING, c.SCHEDULING_MODE_REPLICA).obj()
    with pytest.raises(PodMutationError, match="no scheduler provider is configured"):
        mutate(subject)


@pytest.mark.parametrize(
    ("subject", "want"),
    [
        pytest.param(
            leader()
            .annotation(c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING, c.SCHEDULING_MODE_REPLICA)
            .annotation(c.ANNOTATION_WORKLOAD_NAME, "test-sample-8697f9b6f9")
            .label(c.LABEL_TEMPLATE_REVISION_HASH, "rev1")
            .obj(),
            "test-sample-8697f9b6f9-1-rev1",
            id="replica leader joins its group's PodGroup",
        ),
        pytest.param(
            worker("test-sample-1-2")
            .annotation(c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING, c.SCHEDULING_MODE_ROLE)
            .annotation(c.ANNOTATION_WORKLOAD_NAME, "test-sample-8697f9b6f9")
            .label(c.LABEL_TEMPLATE_REVISION_HASH, "rev1")
            .obj(),
            "test-sample-8697f9b6f9-1-worker-rev1",
            id="role worker joins the worker PodGroup",
        ),
    ],
)
def test_kubernetes_provider_handles_workload_aware_pods(subject: Obj, want: str) -> None:
    """The misleading denial is gone: with the kubernetes provider the pod gets its PodGroup."""
    mutated = mutate(subject, pod_group_injector=workload_pod_group_injector)
    assert mutated["spec"]["schedulingGroup"] == {"podGroupName": want}


def test_kubernetes_provider_leaves_pods_without_the_annotation_alone() -> None:
    mutated = mutate(leader().obj(), pod_group_injector=workload_pod_group_injector)
    assert "schedulingGroup" not in mutated["spec"]


def test_kubernetes_provider_rejects_an_unknown_mode_naming_it() -> None:
    subject = leader().annotation(c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING, "cluster").obj()
    with pytest.raises(PodMutationError, match="unsupported workload-aware scheduling mode 'cluster'"):
        mutate(subject, pod_group_injector=workload_pod_group_injector)
