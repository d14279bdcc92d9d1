"""Property tests: random LeaderWorkerSets, DisaggregatedSets and pods through the handlers.

Nothing may raise; every rejection names a field path and a rule; defaulting is idempotent; a
mutation's JSON patch reproduces the mutated object. The example count is small by default so the
suite stays fast; CI raises it with LWS_HYPOTHESIS_EXAMPLES (e.g. 5000).
"""

import base64
import json
import os
from typing import Any

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired.podmutation import PodMutationError
from leaderworkerset.core.groups.subgroup import leader_is_extra_pod, worker_subgroup_index
from leaderworkerset.webhooks import disaggregatedset, leaderworkerset, pod
from leaderworkerset.webhooks.admission import WebhookOptions, review
from leaderworkerset.webhooks.scheduling import SchedulingAdmission

Obj = dict[str, Any]
EXAMPLES = int(os.environ.get("LWS_HYPOTHESIS_EXAMPLES", "50"))
PROFILE = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Mostly well-typed values, sometimes the wrong type, so decoding tolerance is exercised too.
small_int = st.integers(min_value=-3, max_value=12)
any_int = st.one_of(small_int, st.integers(min_value=-(2**31), max_value=2**31 - 1))
int_or_percent = st.one_of(
    small_int,
    st.sampled_from(["0%", "25%", "50%", "100%", "101%", "200%", "abc", "5", "-5%", "%", ""]),
    st.none(),
    st.floats(allow_nan=False, max_value=10, min_value=-10),
)
maybe = st.one_of(st.none(), st.just("oops"), st.lists(st.integers(), max_size=1))
annotation_keys = st.sampled_from(
    [
        c.ANNOTATION_EXCLUSIVE_TOPOLOGY,
        c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY,
        c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME,
        "example.com/other",
    ]
)
names = st.one_of(st.sampled_from(["lws", "a" * 70, "2cube", "my-set", "", "UPPER"]), st.text(max_size=12))


def _optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


@st.composite
def lws_objects(draw: st.DrawFn) -> Obj:
    template: Obj = {"workerTemplate": {"spec": {"containers": [{"name": "w"}]}}}
    for key, strategy in (
        ("size", st.one_of(small_int, any_int, maybe)),
        ("restartPolicy", st.one_of(st.sampled_from(c.RESTART_POLICIES), st.just(""), maybe)),
        ("maxGroupRestarts", small_int),
        (
            "subGroupPolicy",
            st.fixed_dictionaries(
                {},
                optional={
                    "subGroupSize": st.one_of(small_int, maybe),
                    "subGroupPolicyType": st.one_of(st.sampled_from(c.SUBGROUP_POLICY_TYPES), maybe),
                },
            ),
        ),
        ("volumeClaimTemplates", st.lists(st.just({"metadata": {"name": "d"}}), max_size=1)),
    ):
        value = draw(_optional(strategy))
        if value is not None:
            template[key] = value
    spec: Obj = {"leaderWorkerTemplate": template}
    config = draw(
        _optional(
            st.fixed_dictionaries(
                {},
                optional={
                    "maxUnavailable": int_or_percent,
                    "maxSurge": int_or_percent,
                    "partition": st.one_of(small_int, maybe),
                },
            )
        )
    )
    if draw(st.booleans()):
        spec["rolloutStrategy"] = {"type": draw(st.sampled_from(["", "RollingUpdate", "Other"]))}
        if config is not None:
            spec["rolloutStrategy"]["rollingUpdateConfiguration"] = config
    for key, strategy in (
        ("replicas", st.one_of(small_int, any_int, maybe)),
        ("groupIdentity", st.one_of(st.sampled_from([*c.GROUP_IDENTITIES, ""]), maybe)),
        ("groupReplacementPolicy", st.sampled_from([*c.GROUP_REPLACEMENT_POLICIES, ""])),
        ("networkConfig", st.one_of(st.just({}), st.just({"subdomainPolicy": "UniquePerReplica"}), maybe)),
        ("startupPolicy", st.sampled_from([*c.STARTUP_POLICIES, "bad"])),
        (
            "scheduling",
            st.one_of(
                st.just({}),
                st.just({"replica": {"leader": {"schedulingPolicy": {"gang": {"minCount": 3}}}}}),
                st.just({"schedulingPolicy": {"gang": {"minGroupCount": 2}}, "replica": {}}),
                st.just({"replica": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "g"}]}}),
                maybe,
            ),
        ),
    ):
        value = draw(_optional(strategy))
        if value is not None:
            spec[key] = value
    annotations = draw(st.dictionaries(annotation_keys, st.sampled_from(["", "rack", "zone"]), max_size=3))
    metadata = {"name": draw(names), "namespace": "default", "annotations": annotations}
    return {"apiVersion": c.LWS_API_VERSION, "kind": c.LWS_KIND, "metadata": metadata, "spec": spec}


admissions = st.builds(
    SchedulingAdmission,
    feature_gate_enabled=st.booleans(),
    provider=st.sampled_from([None, "kubernetes", "volcano", "yarn"]),
    workload_api_available=st.booleans(),
)


def _assert_well_formed(errors: list[Any]) -> None:
    for err in errors:
        assert err.field.startswith(("spec", "metadata")), err
        assert err.rule, err
        assert err.error().startswith(err.field + ": ")


@PROFILE
@given(lws_objects(), admissions)
def test_lws_handlers_never_raise_and_name_paths(obj: Obj, admission: SchedulingAdmission) -> None:
    defaulted = leaderworkerset.default_lws(obj)
    assert leaderworkerset.default_lws(defaulted) == defaulted
    _assert_well_formed(leaderworkerset.validate_create(obj, admission))
    _assert_well_formed(leaderworkerset.validate_create(defaulted, admission))


@PROFILE
@given(lws_objects(), lws_objects(), admissions)
def test_lws_update_never_raises(old: Obj, new: Obj, admission: SchedulingAdmission) -> None:
    _assert_well_formed(leaderworkerset.validate_update(old, new, admission))


@PROFILE
@given(lws_objects())
def test_defaulting_patch_reproduces_the_defaulted_object(obj: Obj) -> None:
    body = {"request": {"uid": "u", "operation": "CREATE", "object": obj}}
    response = review(c.WEBHOOK_PATH_MUTATE_LWS, body)["response"]
    assert response["allowed"] is True
    result = obj
    if "patch" in response:
        result = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(response["patch"])))
    assert result == leaderworkerset.default_lws(obj)


@st.composite
def ds_objects(draw: st.DrawFn) -> Obj:
    roles = []
    for i in range(draw(st.integers(min_value=0, max_value=3))):
        spec: Obj = {"leaderWorkerTemplate": {"size": draw(st.one_of(small_int, maybe))}}
        if draw(st.booleans()):
            spec["replicas"] = draw(st.one_of(small_int, maybe))
        if draw(st.booleans()):
            spec["groupIdentity"] = draw(st.sampled_from(c.GROUP_IDENTITIES))
        if draw(st.booleans()):
            spec["rolloutStrategy"] = {
                "type": draw(st.sampled_from(["", "RollingUpdate", "Recreate"])),
                "rollingUpdateConfiguration": {
                    "maxSurge": draw(int_or_percent),
                    "maxUnavailable": draw(int_or_percent),
                    "partition": draw(st.one_of(small_int, maybe)),
                },
            }
        role: Obj = {"name": draw(st.one_of(st.just(f"r{i}"), names)), "spec": spec}
        if draw(st.booleans()):
            role["scaling"] = {"mode": draw(st.sampled_from(c.ROLE_SCALING_MODES))}
        if draw(st.booleans()):
            role["metadata"] = {"annotations": {draw(annotation_keys): "x"}}
        roles.append(role)
    body: Obj = {"roles": roles, "slices": draw(st.one_of(st.integers(min_value=0, max_value=100), maybe))}
    if draw(st.booleans()):
        body["placementPolicy"] = {"type": draw(st.sampled_from([*c.PLACEMENT_TYPES, ""])), "topology": ""}
    return {"metadata": {"name": draw(names), "namespace": "default"}, "spec": body}


@PROFILE
@given(ds_objects())
def test_ds_validation_never_raises_and_names_paths(obj: Obj) -> None:
    warnings, errors = disaggregatedset.validate(obj)
    _assert_well_formed(errors)
    assert all(isinstance(w, str) and w for w in warnings)


label_values = st.one_of(st.sampled_from(["0", "1", "3", "", "x"]), st.text(max_size=4))


@st.composite
def pods(draw: st.DrawFn) -> Obj:
    labels = {c.LABEL_SET_NAME: draw(st.sampled_from(["lws", ""]))}
    for key in (c.LABEL_WORKER_INDEX, c.LABEL_GROUP_INDEX, c.LABEL_SUBGROUP_INDEX, c.LABEL_GROUP_KEY):
        if draw(st.booleans()):
            labels[key] = draw(label_values)
    annotations: dict[str, str] = {}
    for key, values in (
        (c.ANNOTATION_SIZE, st.one_of(st.sampled_from(["1", "2", "5", "9", "0", "-1"]), label_values)),
        (c.ANNOTATION_SUBGROUP_SIZE, st.one_of(st.sampled_from(["1", "2", "4", "0"]), label_values)),
        (c.ANNOTATION_SUBGROUP_POLICY_TYPE, st.sampled_from(c.SUBGROUP_POLICY_TYPES)),
        (c.ANNOTATION_LEADER_REQUESTS_TPUS, st.just("true")),
        (c.ANNOTATION_EXCLUSIVE_TOPOLOGY, st.just("rack")),
        (c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY, st.just("host")),
        (c.ANNOTATION_GROUP_IDENTITY, st.just(c.GROUP_IDENTITY_HASH)),
        (c.ANNOTATION_SUBDOMAIN_POLICY, st.just(c.SUBDOMAIN_UNIQUE_PER_REPLICA)),
        (c.ANNOTATION_LEADER_ADDRESS, st.just("lws-0.lws.ns")),
        (c.ANNOTATION_LEADER_NAME, st.just("lws-0")),
    ):
        if draw(st.booleans()):
            annotations[key] = draw(values)
    tpu = {"resources": {"limits": {c.TPU_RESOURCE_NAME: draw(st.sampled_from(["4", "0", 1]))}}}
    container = {
        "name": "main",
        "env": draw(
            st.lists(
                st.sampled_from(
                    [
                        {"name": c.ENV_LWS_GROUP_SIZE, "value": "u"},
                        {"name": "A", "value": "1"},
                        {"name": c.ENV_TPU_PROCESS_PORT, "value": "9000"},
                        {"name": c.ENV_TPU_WORKER_ID, "value": "0"},
                    ]
                ),
                max_size=3,
            )
        ),
    }
    if draw(st.booleans()):
        container.update(tpu)
    spec: Obj = {"containers": [container], "subdomain": "lws"}
    if draw(st.booleans()):
        spec["initContainers"] = [{"name": "init", **tpu}]
    name = draw(st.sampled_from(["lws-0", "lws-1-3", "lws-12-1", "lws", "lws-x", "lws-0-99"]))
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels, "annotations": annotations},
        "spec": spec,
    }


@PROFILE
@given(pods())
def test_pod_mutation_never_raises_unexpectedly_and_patch_matches(subject: Obj) -> None:
    options = WebhookOptions(token_source=lambda: "token")
    mutated: Obj | None = None
    denial = ""
    try:
        mutated = pod.default_pod(subject, token_source=options.token_source)
    except PodMutationError as err:
        denial = str(err)
    assert (mutated is None) == bool(denial)
    body = {"request": {"uid": "u", "operation": "CREATE", "object": subject}}
    response = review(c.WEBHOOK_PATH_MUTATE_POD, body, options)["response"]
    assert response["allowed"] is (mutated is not None)
    if mutated is not None and "patch" in response:
        operations = json.loads(base64.b64decode(response["patch"]))
        assert jsonpatch.apply_patch(subject, operations) == mutated


@st.composite
def lws_pods(draw: st.DrawFn) -> Obj:
    """`pods()` narrowed to LWS pods of a valid size and name, so most are admitted: the arbitrary
    ones are nearly all denied for a missing or garbled size annotation."""
    subject = draw(pods())
    meta = subject["metadata"]
    meta["labels"][c.LABEL_SET_NAME] = "lws"
    meta["annotations"][c.ANNOTATION_SIZE] = draw(st.sampled_from(["1", "2", "5", "9"]))
    meta["name"] = draw(st.sampled_from(["lws-0", "lws-3", "lws-1-3", "lws-12-1", "lws-0-4"]))
    return subject


def test_mutated_pods_have_lws_env_first() -> None:
    """Every LWS pod the webhook admits gets the LWS variables first, once. The run counts the
    examples that reach the assertions, so that a strategy drifting into only denials (as the
    unnarrowed `pods()` nearly does) cannot pass without checking anything."""
    reached = {"mutated": 0, "denied": 0}  # branch -> examples that took it

    @PROFILE
    @given(lws_pods())
    def check(subject: Obj) -> None:
        try:
            mutated = pod.default_pod(subject, token_source=lambda: "token")
        except PodMutationError:
            reached["denied"] += 1
            return
        for container in [*mutated["spec"]["containers"], *mutated["spec"].get("initContainers", [])]:
            names = [e["name"] for e in container["env"]]
            assert names[:3] == [c.ENV_LWS_LEADER_ADDRESS, c.ENV_LWS_GROUP_SIZE, c.ENV_LWS_WORKER_INDEX]
            assert len(names) == len(set(names))
        reached["mutated"] += 1

    check()
    # About 60% of the narrowed examples are admitted; a quarter is a floor far below that.
    assert reached["mutated"] >= EXAMPLES // 4, reached


@st.composite
def valid_subgroup_shapes(draw: st.DrawFn) -> tuple[int, int]:
    subgroup_size = draw(st.integers(min_value=1, max_value=8))
    groups = draw(st.integers(min_value=1, max_value=6))
    size = subgroup_size * groups + draw(st.sampled_from([0, 1]))
    return size, subgroup_size


@PROFILE
@given(valid_subgroup_shapes())
def test_subgroups_partition_the_group(shape: tuple[int, int]) -> None:
    size, subgroup_size = shape
    members: dict[int, int] = {0: 1}  # the leader is in subgroup 0 (LeaderWorker policy)
    for worker_index in range(1, size):
        index = worker_subgroup_index(size, subgroup_size, worker_index)
        members[index] = members.get(index, 0) + 1
    assert sorted(members) == list(range(len(members)))
    extra = 1 if leader_is_extra_pod(size, subgroup_size) else 0
    assert members[0] <= subgroup_size + extra
    assert all(count <= subgroup_size for index, count in members.items() if index > 0)
