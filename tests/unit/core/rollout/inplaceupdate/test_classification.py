"""Diff-aware updates, pure (core/rollout/inplaceupdate/classification.py): every class of template
field, the path it needs, and the reason `lws plan` prints for it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.core.rollout.inplaceupdate.classification import UpdatePath, classify_template_change
from tests.support.builders import LeaderWorkerSetBuilder

Obj = dict[str, Any]
Mutation = Callable[[Obj], None]


def base() -> Obj:
    lws = (
        LeaderWorkerSetBuilder("ns", "model")
        .size(2)
        .leader_template(
            {"containers": [{"name": "main", "image": "vllm:1", "resources": {"requests": {"cpu": "1"}}}]}
        )
        .worker_template(
            {
                "metadata": {"labels": {"team": "a"}},
                "spec": {
                    "initContainers": [
                        {"name": "fetch", "image": "fetch:1"},
                        {"name": "proxy", "image": "proxy:1", "restartPolicy": "Always"},
                    ],
                    "containers": [
                        {
                            "name": "main",
                            "image": "vllm:1",
                            "env": [{"name": "MODE", "value": "a"}],
                            "resources": {
                                "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "8"},
                                "limits": {"memory": "8Gi", "nvidia.com/gpu": "8"},
                            },
                        }
                    ],
                    "tolerations": [{"key": "gpu", "operator": "Exists"}],
                },
            }
        )
        .obj()
    )
    spec = lws["spec"]
    return {"leaderWorkerTemplate": spec["leaderWorkerTemplate"], "networkConfig": spec.get("networkConfig")}


def worker(spec: Obj) -> Obj:
    return spec["leaderWorkerTemplate"]["workerTemplate"]


def main(spec: Obj) -> Obj:
    return worker(spec)["spec"]["containers"][0]


@dataclass(frozen=True)
class Case:
    change: Mutation
    path: UpdatePath
    where: str = ""
    resizes: bool = True


def image(spec: Obj) -> None:
    main(spec)["image"] = "vllm:2"


CASES = {
    "nothing changed": Case(lambda s: None, UpdatePath.NONE),
    "a template label": Case(
        lambda s: worker(s)["metadata"]["labels"].update(team="b"),
        UpdatePath.METADATA,
        "workerTemplate.metadata.labels",
    ),
    "a template annotation": Case(
        lambda s: worker(s)["metadata"].update(annotations={"a": "b"}),
        UpdatePath.METADATA,
        "workerTemplate.metadata.annotations",
    ),
    "the main image": Case(image, UpdatePath.POD_UPDATE, "workerTemplate.spec.containers[main].image"),
    "the leader's image": Case(
        lambda s: s["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0].update(image="vllm:2"),
        UpdatePath.POD_UPDATE,
        "leaderTemplate.spec.containers[main].image",
    ),
    "a sidecar's image": Case(
        lambda s: worker(s)["spec"]["initContainers"][1].update(image="proxy:2"),
        UpdatePath.POD_UPDATE,
        "workerTemplate.spec.initContainers[proxy].image",
    ),
    "an init container's image (it has run)": Case(
        lambda s: worker(s)["spec"]["initContainers"][0].update(image="fetch:2"),
        UpdatePath.RECREATE,
        "workerTemplate.spec.initContainers[fetch].image",
    ),
    "a toleration added": Case(
        lambda s: worker(s)["spec"]["tolerations"].append({"key": "spot", "operator": "Exists"}),
        UpdatePath.POD_UPDATE,
        "workerTemplate.spec.tolerations",
    ),
    "a toleration removed": Case(
        lambda s: worker(s)["spec"].update(tolerations=[]),
        UpdatePath.RECREATE,
        "workerTemplate.spec.tolerations",
    ),
    "cpu and memory requests": Case(
        lambda s: main(s)["resources"]["requests"].update(cpu="4", memory="6Gi"),
        UpdatePath.RESIZE,
        "workerTemplate.spec.containers[main].resources",
    ),
    "a memory limit": Case(
        lambda s: main(s)["resources"]["limits"].update(memory="16Gi"),
        UpdatePath.RESIZE,
        "workerTemplate.spec.containers[main].resources",
    ),
    "cpu on a cluster that does not resize": Case(
        lambda s: main(s)["resources"]["requests"].update(cpu="4"),
        UpdatePath.RECREATE,
        "workerTemplate.spec.containers[main].resources",
        resizes=False,
    ),
    "accelerators": Case(
        lambda s: main(s)["resources"]["limits"].update({"nvidia.com/gpu": "4"}),
        UpdatePath.RECREATE,
        "workerTemplate.spec.containers[main].resources",
    ),
    "resource claims": Case(
        lambda s: main(s)["resources"].update(claims=[{"name": "gpu"}]),
        UpdatePath.RECREATE,
        "workerTemplate.spec.containers[main].resources.claims",
    ),
    "env (immutable on a pod)": Case(
        lambda s: main(s)["env"][0].update(value="b"),
        UpdatePath.RECREATE,
        "workerTemplate.spec.containers[main].env",
    ),
    "the command": Case(
        lambda s: main(s).update(command=["serve"]),
        UpdatePath.RECREATE,
        "workerTemplate.spec.containers[main].command",
    ),
    "a container added": Case(
        lambda s: worker(s)["spec"]["containers"].append({"name": "x", "image": "x"}),
        UpdatePath.RECREATE,
        "workerTemplate.spec.containers",
    ),
    "volumes": Case(
        lambda s: worker(s)["spec"].update(volumes=[{"name": "v", "emptyDir": {}}]),
        UpdatePath.RECREATE,
        "workerTemplate.spec.volumes",
    ),
    "the group size": Case(
        lambda s: s["leaderWorkerTemplate"].update(size=4), UpdatePath.RECREATE, "leaderWorkerTemplate.size"
    ),
    "the network config": Case(
        lambda s: s.update(networkConfig={"subdomainPolicy": "UniquePerReplica"}),
        UpdatePath.RECREATE,
        "networkConfig",
    ),
    "the leader template removed": Case(
        lambda s: s["leaderWorkerTemplate"].pop("leaderTemplate"),
        UpdatePath.RECREATE,
        "leaderWorkerTemplate.leaderTemplate",
    ),
    "an image and env together: the highest path wins": Case(
        lambda s: (image(s), main(s)["env"][0].update(value="b")),
        UpdatePath.RECREATE,
        "workerTemplate.spec.containers[main].env",
    ),
    "an image and a label together": Case(
        lambda s: (image(s), worker(s)["metadata"]["labels"].update(team="b")),
        UpdatePath.POD_UPDATE,
        "workerTemplate.spec.containers[main].image",
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_field_class_takes_its_path(case: Case) -> None:
    old = base()
    new = copy.deepcopy(old)
    case.change(new)
    got = classify_template_change(old, new, resizes_in_place=case.resizes)
    assert got.path is case.path
    assert got.in_place is (UpdatePath.NONE < case.path < UpdatePath.RECREATE)
    if case.where:
        assert any(reason.startswith(f"{case.where}: ") for reason in got.reasons(case.path)), got


def test_every_case_ran_and_every_path_is_covered() -> None:
    assert len(CASES) == 23
    assert {case.path for case in CASES.values()} == set(UpdatePath)


def test_without_a_leader_template_worker_changes_are_named_once() -> None:
    old = base()
    old["leaderWorkerTemplate"].pop("leaderTemplate")
    new = copy.deepcopy(old)
    image(new)
    got = classify_template_change(old, new, resizes_in_place=True)
    assert got.reasons(UpdatePath.POD_UPDATE) == [
        "workerTemplate.spec.containers[main].image: the kubelet restarts this container"
    ]
