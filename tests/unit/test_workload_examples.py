"""docs/examples/ray and docs/examples/jax as a user copies them: sets the webhook admits, on the
workload images by their contract names, the program of the kustomization's ConfigMap mounted where the
command runs it, readiness on the leader only (on the port the Service sends to), and a restart policy
and startup policy that let a group form and recover as a whole. (They run on real kubelets in
tests/e2e/realnodes/test_workloads.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderworkerset.devcluster.realnodes.workloads import WORKLOAD_IMAGES
from leaderworkerset.webhooks.leaderworkerset import validate_create

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
Obj = dict[str, Any]


def documents(runtime: str) -> dict[str, Obj]:
    """The example's objects by kind (kubectl reads the anchors as yaml.safe_load does)."""
    docs = yaml.safe_load_all((EXAMPLES / runtime / "lws.yaml").read_text())
    return {doc["kind"]: doc for doc in docs if doc}


@pytest.fixture(params=sorted(WORKLOAD_IMAGES))
def runtime(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_the_set_is_admitted_as_it_is(runtime: str) -> None:
    lws = documents(runtime)["LeaderWorkerSet"]
    lws["metadata"]["namespace"] = "default"
    assert validate_create(lws) == []


def test_it_runs_its_program_from_its_configmap_on_the_contract_image(runtime: str) -> None:
    lws = documents(runtime)["LeaderWorkerSet"]
    kustomization = yaml.safe_load((EXAMPLES / runtime / "kustomization.yaml").read_text())
    (generator,) = kustomization["configMapGenerator"]
    (program,) = generator["files"]
    assert (EXAMPLES / runtime / program).is_file()
    templates = lws["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        spec = templates[role]["spec"]
        (container,) = spec["containers"]
        assert container["image"] == WORKLOAD_IMAGES[runtime], role
        volumes = {v["name"]: v for v in spec["volumes"]}
        mount = next(m for m in container["volumeMounts"] if volumes[m["name"]].get("configMap"))
        assert volumes[mount["name"]]["configMap"]["name"] == generator["name"], role
        assert container["command"][:2] == ["python3", f"{mount['mountPath']}/{program}"], role


def test_only_the_leader_is_probed_on_the_port_its_service_sends_to(runtime: str) -> None:
    docs = documents(runtime)
    templates = docs["LeaderWorkerSet"]["spec"]["leaderWorkerTemplate"]
    (leader,) = templates["leaderTemplate"]["spec"]["containers"]
    (worker,) = templates["workerTemplate"]["spec"]["containers"]
    assert "readinessProbe" not in worker
    ports = {p["name"]: p["containerPort"] for p in leader["ports"]}
    (service_port,) = docs["Service"]["spec"]["ports"]
    assert leader["readinessProbe"]["tcpSocket"]["port"] == ports[service_port["targetPort"]]
    assert (
        docs["Service"]["spec"]["selector"]["role"]
        == templates["leaderTemplate"]["metadata"]["labels"]["role"]
    )


def test_groups_start_together_and_are_recreated_as_a_whole(runtime: str) -> None:
    lws = documents(runtime)["LeaderWorkerSet"]
    # LeaderReady would create the workers only once the leader is Ready, which it is only once they
    # joined: the group would never form.
    assert lws["spec"].get("startupPolicy", "LeaderCreated") == "LeaderCreated"
    assert lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    rollout = lws["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
    assert (rollout["maxSurge"], rollout["maxUnavailable"]) == (1, 0)
