"""TPU environment computation, mirroring upstream's accelerator tests."""

from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired import tpu
from tests.support.builders import pod, tpu_container, tpu_pod_spec

Obj = dict[str, Any]


@dataclass(frozen=True)
class TPUCase:
    pod: Obj
    size: int
    want_hostnames: str
    want_worker_id: str
    want_name: str
    want_addresses: str
    want_port: str = "8476"


def _env(container: Obj) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


NO_SUBGROUP_CASES = [
    pytest.param(
        TPUCase(
            pod("test-sample-0").worker_index("0").leader_requests_tpus().spec(tpu_pod_spec()).obj(),
            2,
            "test-sample-0.default,test-sample-0-1.default",
            "0",
            "test-sample-0",
            "test-sample-0.default:8476,test-sample-0-1.default:8476",
        ),
        id="leader requests TPUs, leader pod",
    ),
    pytest.param(
        TPUCase(
            pod("test-sample-0-1").worker_index("1").leader_requests_tpus().spec(tpu_pod_spec()).obj(),
            2,
            "test-sample-0.default,test-sample-0-1.default",
            "1",
            "test-sample-0",
            "test-sample-0.default:8476,test-sample-0-1.default:8476",
        ),
        id="leader requests TPUs, worker pod",
    ),
    pytest.param(
        TPUCase(
            pod("test-sample-0").worker_index("0").spec(tpu_pod_spec()).obj(),
            2,
            "test-sample-0.default,test-sample-0-1.default",
            "0",
            "test-sample-0",
            "test-sample-0.default:8476,test-sample-0-1.default:8476",
        ),
        id="leader pod without the annotation still lists itself",
    ),
    pytest.param(
        TPUCase(
            pod("test-sample-0-1").worker_index("1").spec(tpu_pod_spec()).obj(),
            2,
            "test-sample-0-1.default",
            "0",
            "test-sample-0",
            "test-sample-0-1.default:8476",
        ),
        id="leader does not request TPUs, worker ids shift by one",
    ),
    pytest.param(
        TPUCase(
            pod("test-sample-0")
            .worker_index("0")
            .leader_requests_tpus()
            .spec(tpu_pod_spec(tpu_container("c1"), tpu_container("c2")))
            .obj(),
            2,
            "test-sample-0.default,test-sample-0.default,test-sample-0-1.default,test-sample-0-1.default",
            "0",
            "test-sample-0",
            "test-sample-0.default:8476,test-sample-0.default:8477,"
            "test-sample-0-1.default:8476,test-sample-0-1.default:8477",
        ),
        id="two TPU containers get consecutive default ports",
    ),
    pytest.param(
        TPUCase(
            pod("test-sample-0")
            .worker_index("0")
            .leader_requests_tpus()
            .spec(
                tpu_pod_spec(
                    tpu_container("c1", [{"name": c.ENV_TPU_PROCESS_PORT, "value": "8478"}]),
                    tpu_container("c2", [{"name": c.ENV_TPU_PROCESS_PORT, "value": "8479"}]),
                )
            )
            .obj(),
            2,
            "test-sample-0.default,test-sample-0.default,test-sample-0-1.default,test-sample-0-1.default",
            "0",
            "test-sample-0",
            "test-sample-0.default:8478,test-sample-0.default:8479,"
            "test-sample-0-1.default:8478,test-sample-0-1.default:8479",
            want_port="8478",
        ),
        id="user ports are kept and used in addresses",
    ),
    pytest.param(
        TPUCase(
            pod("sample-0")
            .worker_index("0")
            .spec(
                {
                    "initContainers": [tpu_container("init")],
                    "containers": [{"name": "main"}],
                    "subdomain": "default",
                }
            )
            .obj(),
            1,
            "sample-0.default",
            "0",
            "sample-0",
            "sample-0.default:8476",
        ),
        id="TPU resources in init containers",
    ),
]


@pytest.mark.parametrize("case", NO_SUBGROUP_CASES)
def test_tpu_env_without_subgroups(case: TPUCase) -> None:
    tpu.add_tpu_variables(case.pod, case.size)
    first = tpu.tpu_containers(case.pod["spec"])[0]
    env = _env(first)
    assert env[c.ENV_TPU_WORKER_HOSTNAMES] == case.want_hostnames
    assert env[c.ENV_TPU_WORKER_ID] == case.want_worker_id
    assert env[c.ENV_TPU_NAME] == case.want_name
    assert env[c.ENV_TPU_PROCESS_ADDRESSES] == case.want_addresses
    assert env[c.ENV_TPU_PROCESS_PORT] == case.want_port


def test_second_tpu_container_gets_next_worker_id_and_port() -> None:
    subject = (
        pod("test-sample-0")
        .worker_index("0")
        .spec(tpu_pod_spec(tpu_container("a"), tpu_container("b")))
        .obj()
    )
    tpu.add_tpu_variables(subject, 2)
    second = _env(subject["spec"]["containers"][1])
    assert (second[c.ENV_TPU_WORKER_ID], second[c.ENV_TPU_PROCESS_PORT]) == ("1", "8477")


SUBGROUP_CASES = [
    pytest.param(
        TPUCase(
            pod("test-sample-0")
            .worker_index("0")
            .label(c.LABEL_SUBGROUP_INDEX, "0")
            .subgroup_size("1")
            .spec(tpu_pod_spec())
            .obj(),
            1,
            "test-sample-0.default",
            "0",
            "test-sample-0",
            "test-sample-0.default:8476",
        ),
        id="subgroup size 1, leader pod",
    ),
    pytest.param(
        TPUCase(
            pod("test-sample-0")
            .worker_index("0")
            .label(c.LABEL_SUBGROUP_INDEX, "0")
            .subgroup_size("2")
            .spec(tpu_pod_spec())
            .obj(),
            2,
            "test-sample-0.default,test-sample-0-1.default",
            "0",
            "test-sample-0",
            "test-sample-0.default:8476,test-sample-0-1.default:8476",
        ),
        id="subgroup size 2, leader pod",
    ),
    pytest.param(
        TPUCase(
            pod("test-sample-1-3")
            .worker_index("3")
            .label(c.LABEL_SUBGROUP_INDEX, "0")
            .leader_requests_tpus()
            .subgroup_size("5")
            .spec(tpu_pod_spec())
            .obj(),
            10,
            "test-sample-1.default,test-sample-1-1.default,test-sample-1-2.default,"
            "test-sample-1-3.default,test-sample-1-4.default",
            "3",
            "test-sample-1",
            "test-sample-1.default:8476,test-sample-1-1.default:8476,test-sample-1-2.default:8476,"
            "test-sample-1-3.default:8476,test-sample-1-4.default:8476",
        ),
        id="leader requests TPUs, worker in subgroup 0",
    ),
    pytest.param(
        TPUCase(
            pod("test-sample-1-7")
            .worker_index("7")
            .label(c.LABEL_SUBGROUP_INDEX, "1")
            .leader_requests_tpus()
            .subgroup_size("5")
            .spec(tpu_pod_spec())
            .obj(),
            10,
            "test-sample-1-5.default,test-sample-1-6.default,test-sample-1-7.default,"
            "test-sample-1-8.default,test-sample-1-9.default",
            "2",
            "test-sample-1",
            "test-sample-1-5.default:8476,test-sample-1-6.default:8476,test-sample-1-7.default:8476,"
            "test-sample-1-8.default:8476,test-sample-1-9.default:8476",
        ),
        id="leader requests TPUs, later subgroups shift left by one",
    ),
    pytest.param(
        TPUCase(
            pod("test-sample-1-7")
            .worker_index("7")
            .label(c.LABEL_SUBGROUP_INDEX, "1")
            .subgroup_size("5")
            .spec(tpu_pod_spec())
            .obj(),
            11,
            "test-sample-1-6.default,test-sample-1-7.default,test-sample-1-8.default,"
            "test-sample-1-9.default,test-sample-1-10.default",
            "1",
            "test-sample-1",
            "test-sample-1-6.default:8476,test-sample-1-7.default:8476,test-sample-1-8.default:8476,"
            "test-sample-1-9.default:8476,test-sample-1-10.default:8476",
        ),
        id="leader without TPUs, subgroup recomputed from worker index",
    ),
]


@pytest.mark.parametrize("case", SUBGROUP_CASES)
def test_tpu_env_with_subgroups(case: TPUCase) -> None:
    tpu.add_tpu_variables(case.pod, case.size)
    env = _env(tpu.tpu_containers(case.pod["spec"])[0])
    assert env[c.ENV_TPU_WORKER_HOSTNAMES] == case.want_hostnames
    assert env[c.ENV_TPU_WORKER_ID] == case.want_worker_id
    assert env[c.ENV_TPU_NAME] == case.want_name
    assert env[c.ENV_TPU_PROCESS_ADDRESSES] == case.want_addresses
    assert env[c.ENV_TPU_PROCESS_PORT] == case.want_port


@pytest.mark.parametrize(
    "subject",
    [
        pytest.param(
            pod("p-0")
            .worker_index("0")
            .spec(tpu_pod_spec(tpu_container(env=[{"name": c.ENV_TPU_WORKER_ID, "value": "0"}])))
            .obj(),
            id="non-subgroup",
        ),
        pytest.param(
            pod("p-0")
            .worker_index("0")
            .subgroup_size("1")
            .spec(tpu_pod_spec(tpu_container(env=[{"name": c.ENV_TPU_WORKER_ID, "value": "0"}])))
            .obj(),
            id="subgroup",
        ),
    ],
)
def test_existing_worker_id_skips_injection(subject: Obj) -> None:
    tpu.add_tpu_variables(subject, 1)
    assert subject["spec"]["containers"][0]["env"] == [{"name": c.ENV_TPU_WORKER_ID, "value": "0"}]


def test_worker_without_ordinal_is_rejected() -> None:
    subject = pod("invalid").worker_index("1").spec(tpu_pod_spec()).obj()
    with pytest.raises(tpu.TPUEnvError, match="parsing parent name from pod invalid"):
        tpu.add_tpu_variables(subject, 1)


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        pytest.param({"limits": {c.TPU_RESOURCE_NAME: "4"}}, True, id="limit"),
        pytest.param({"requests": {c.TPU_RESOURCE_NAME: "1"}}, True, id="request only"),
        pytest.param({"limits": {c.TPU_RESOURCE_NAME: "0"}}, False, id="zero limit"),
        pytest.param(
            {"limits": {c.TPU_RESOURCE_NAME: "0"}, "requests": {c.TPU_RESOURCE_NAME: "2"}},
            True,
            id="zero limit, request",
        ),
        pytest.param({"limits": {"cpu": "4"}}, False, id="other resource"),
        pytest.param({}, False, id="no resources"),
    ],
)
def test_container_requests_tpus(resources: Obj, want: bool) -> None:
    assert tpu.container_requests_tpus({"name": "c", "resources": resources}) is want
