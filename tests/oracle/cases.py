"""Inputs for the upstream oracle (see regen.sh): LWS objects, stored revisions, quantities and JSON
texts chosen to exercise every rule of Go's encoding that the revision key depends on.

Prints one JSON document on stdout; the Go oracle answers each row. Deterministic (seeded).
Numbers in LWS objects are written as the API server writes them (integers as integers, other
floats in Go's shortest form), because that is what a controller reads.
"""

from __future__ import annotations

import copy
import json
import random
import struct
import sys
from pathlib import Path
from typing import Any

import yaml

# Run as a script (regen.sh, fuzz.py): the repository root makes tests.support importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.support import upstream

UID = "4f1c3a52-8d4e-4c47-9a37-6b2f4ad0c001"


def lws(spec: dict[str, Any], name: str = "sample", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "default", "uid": UID, "generation": 1, **meta},
        "spec": spec,
    }


def container(name: str = "nginx", image: str = "nginx:1.27", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def template(*containers: dict[str, Any], **spec_extra: Any) -> dict[str, Any]:
    return {"spec": {"containers": list(containers) or [container()], **spec_extra}}


def workers(tmpl: dict[str, Any] | None = None, **lwt: Any) -> dict[str, Any]:
    return {"leaderWorkerTemplate": {"workerTemplate": tmpl or template(), **lwt}}


PROBE_HTTP = {
    "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
    "initialDelaySeconds": 5,
    "periodSeconds": 10,
}
PROBE_TCP = {"tcpSocket": {"port": 9000}, "failureThreshold": 3}
PROBE_GRPC = {"grpc": {"port": 9090, "service": "health"}, "timeoutSeconds": 1}
PROBE_EXEC = {"exec": {"command": ["cat", "/tmp/ready"]}, "successThreshold": 1}

AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "accelerator", "operator": "In", "values": ["a100", "h100"]}]}
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "preference": {
                    "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]
                },
            }
        ],
    },
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"app": "x"}},
                    "topologyKey": "kubernetes.io/hostname",
                    "matchLabelKeys": ["pod-template-hash"],
                },
            }
        ]
    },
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                "topologyKey": "zone",
            }
        ]
    },
}

TOLERATIONS = [
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {
        "key": "dedicated",
        "operator": "Equal",
        "value": "llm",
        "effect": "NoExecute",
        "tolerationSeconds": 3600,
    },
    {"operator": "Exists"},
]

SPECIAL_ENV = [
    {"name": "HTML", "value": "<b>bold</b> & 'quotes' \"double\""},
    {"name": "UNICODE", "value": "héllo 世界 \U0001f680 \u00a0nbsp"},
    {"name": "SEPARATORS", "value": "line\u2028para\u2029end"},
    {"name": "CONTROL", "value": "tab\there\nnewline\r\x01\x1f\x7f\b\f"},
    {"name": "BACKSLASH", "value": "C:\\path\\to /slash"},
    {"name": "EMPTY", "value": ""},
    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    {
        "name": "FIELD_WITH_VERSION",
        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
    },
    {
        "name": "MEM",
        "valueFrom": {
            "resourceFieldRef": {"containerName": "nginx", "resource": "limits.memory", "divisor": "1Mi"}
        },
    },
    {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1000m"}}},
    {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": False}}},
    {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k", "optional": True}}},
]

VOLUMES = [
    {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
    {"name": "scratch", "emptyDir": {}},
    {
        "name": "cfg",
        "configMap": {
            "name": "cfg",
            "items": [{"key": "a", "path": "a.txt", "mode": 256}],
            "defaultMode": 420,
        },
    },
    {"name": "sec", "secret": {"secretName": "s", "optional": True}},
    {"name": "host", "hostPath": {"path": "/dev/shm", "type": "Directory"}},
    {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
    {
        "name": "proj",
        "projected": {
            "sources": [
                {"serviceAccountToken": {"audience": "api", "expirationSeconds": 3600, "path": "token"}},
                {
                    "downwardAPI": {
                        "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
                    }
                },
            ]
        },
    },
    {
        "name": "eph",
        "ephemeral": {
            "volumeClaimTemplate": {
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}
            }
        },
    },
]

PVC = {
    "metadata": {"name": "data", "labels": {"tier": "storage"}},
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "standard",
        "volumeMode": "Filesystem",
        "resources": {"requests": {"storage": "10Gi"}, "limits": {"storage": "20480Mi"}},
    },
}


def revision_cases() -> list[dict[str, Any]]:
    rows: list[tuple[str, dict[str, Any]]] = [
        ("minimal worker template", lws(workers())),
        (
            "leader and worker templates",
            lws(
                workers(
                    leaderTemplate=template(
                        container("leader", "vllm:0.6", command=["python3", "-m", "serve"])
                    ),
                    size=4,
                )
            ),
        ),
        (
            "quantities are canonicalised",
            lws(
                workers(
                    template(
                        container(
                            resources={
                                "limits": {
                                    "cpu": "1000m",
                                    "memory": "1Gi",
                                    "nvidia.com/gpu": 2,
                                    "ephemeral-storage": "2048Mi",
                                },
                                "requests": {
                                    "cpu": "0.5",
                                    "memory": "1e3",
                                    "hugepages-2Mi": "1.5Gi",
                                    "example.com/foo": "+1",
                                },
                            }
                        )
                    )
                )
            ),
        ),
        (
            "more quantity spellings",
            lws(
                workers(
                    template(
                        container(
                            resources={
                                "limits": {
                                    "cpu": "100m",
                                    "memory": "1024Mi",
                                    "a": "0.1",
                                    "b": "1E3",
                                    "c": "1k",
                                    "d": "1000",
                                    "e": "12e-3",
                                    "f": 0.25,
                                }
                            }
                        )
                    )
                )
            ),
        ),
        (
            "probes with int-or-string ports",
            lws(
                workers(
                    template(
                        container(
                            ports=[
                                {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                                {"containerPort": 9000, "hostPort": 0},
                            ],
                            readinessProbe=PROBE_HTTP,
                            livenessProbe=PROBE_TCP,
                            startupProbe=PROBE_GRPC,
                        ),
                        container("sidecar", "busybox", livenessProbe=PROBE_EXEC),
                    )
                )
            ),
        ),
        (
            "affinity and tolerations",
            lws(workers(template(affinity=AFFINITY, tolerations=TOLERATIONS, nodeSelector={"pool": "gpu"}))),
        ),
        ("env with special characters", lws(workers(template(container(env=SPECIAL_ENV))))),
        (
            "volumes",
            lws(
                workers(
                    template(
                        container(volumeMounts=[{"name": "shm", "mountPath": "/dev/shm"}]), volumes=VOLUMES
                    )
                )
            ),
        ),
        (
            "init containers and sidecars",
            lws(
                workers(
                    template(
                        container(),
                        initContainers=[
                            container("init", "busybox", command=["sh", "-c", "echo hi"]),
                            container("proxy", "envoy", restartPolicy="Always"),
                        ],
                    )
                )
            ),
        ),
        (
            "empty lists and empty objects",
            lws(
                workers(
                    template(
                        container(env=[], ports=[], args=[], resources={}, volumeMounts=[]),
                        volumes=[],
                        tolerations=[],
                        nodeSelector={},
                    )
                )
            ),
        ),
        (
            "explicit nulls",
            lws(
                workers(
                    template(
                        container(env=None, resources=None, securityContext=None),
                        nodeSelector=None,
                        affinity=None,
                    )
                )
            ),
        ),
        (
            "template metadata",
            lws(
                workers(
                    {
                        "metadata": {
                            "labels": {"app": "x", "tier": "worker"},
                            "annotations": {"a/b": "<>&"},
                            "name": "ignored-but-kept",
                        },
                        "spec": {"containers": [container()]},
                    }
                )
            ),
        ),
        (
            "creationTimestamp null in template metadata",
            lws(workers({"metadata": {"creationTimestamp": None}, "spec": {"containers": [container()]}})),
        ),
        (
            "creationTimestamp set with offset and fraction",
            lws(
                workers(
                    {
                        "metadata": {"creationTimestamp": "2024-01-02T03:04:05.123+02:00"},
                        "spec": {"containers": [container()]},
                    }
                )
            ),
        ),
        ("size and restart policy", lws(workers(size=4, restartPolicy="RecreateGroupOnPodRestart"))),
        ("restart policy None", lws(workers(size=2, restartPolicy="None"))),
        ("subgroup policy LeaderWorker", lws(workers(size=4, subGroupPolicy={"subGroupSize": 2}))),
        (
            "subgroup policy LeaderExcluded",
            lws(workers(size=5, subGroupPolicy={"subGroupPolicyType": "LeaderExcluded", "subGroupSize": 2})),
        ),
        ("subgroup policy empty object", lws(workers(size=2, subGroupPolicy={}))),
        (
            "network config UniquePerReplica",
            lws({**workers(), "networkConfig": {"subdomainPolicy": "UniquePerReplica"}}),
        ),
        (
            "network config Shared explicit",
            lws({**workers(), "networkConfig": {"subdomainPolicy": "Shared"}}),
        ),
        ("network config empty object", lws({**workers(), "networkConfig": {}})),
        ("network config null", lws({**workers(), "networkConfig": None})),
        (
            "volume claim templates and retention policy",
            lws(
                workers(
                    volumeClaimTemplates=[
                        PVC,
                        {
                            "metadata": {"name": "cache"},
                            "spec": {"resources": {"requests": {"storage": "0.5Gi"}}},
                        },
                    ],
                    persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete", "whenScaled": "Retain"},
                )
            ),
        ),
        (
            "volume claim template with status",
            lws(
                workers(
                    volumeClaimTemplates=[
                        {
                            **PVC,
                            "status": {
                                "phase": "Pending",
                                "capacity": {"storage": "10Gi"},
                                "conditions": [{"type": "Resizing", "status": "True"}],
                            },
                        }
                    ]
                )
            ),
        ),
        (
            "unknown fields are dropped",
            lws(
                {
                    "leaderWorkerTemplate": {
                        "workerTemplate": {
                            "bogus": 1,
                            "metadata": {"labels": {"a": "b"}, "unknownMeta": True},
                            "spec": {
                                "containers": [container(notAField="x")],
                                "alsoUnknown": {"deep": [1, 2]},
                            },
                        },
                        "futureField": {"x": 1},
                    }
                }
            ),
        ),
        ("no leaderWorkerTemplate", lws({})),
        (
            "nulls inside maps and lists",
            lws(
                workers(
                    {
                        "metadata": {"labels": {"a": None}, "annotations": {"b": None}},
                        "spec": {
                            "containers": [
                                container(resources={"limits": {"memory": None}}, args=[None, "x"])
                            ],
                            "tolerations": [None],
                            "nodeSelector": {"zone": None},
                        },
                    }
                )
            ),
        ),
        (
            "zero timestamp and explicit zero values",
            lws(
                workers(
                    {
                        "metadata": {
                            "creationTimestamp": "0001-01-01T00:00:00Z",
                            "generation": 0,
                            "name": "",
                        },
                        "spec": {"containers": [container(ports=[{"containerPort": 0}])], "priority": 0},
                    }
                )
            ),
        ),
        (
            "large integers lose precision through float64",
            lws(
                workers(
                    template(
                        terminationGracePeriodSeconds=9007199254740993,
                        activeDeadlineSeconds=9223372036854775807,
                        priority=2147483647,
                    )
                )
            ),
        ),
        (
            "security contexts",
            lws(
                workers(
                    template(
                        container(
                            securityContext={
                                "runAsUser": 0,
                                "runAsNonRoot": False,
                                "privileged": False,
                                "capabilities": {"add": ["IPC_LOCK"], "drop": ["ALL"]},
                                "seccompProfile": {"type": "RuntimeDefault"},
                            }
                        ),
                        securityContext={
                            "fsGroup": 2000,
                            "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}],
                        },
                        hostUsers=False,
                    )
                )
            ),
        ),
        (
            "dns config, host aliases and lifecycle",
            lws(
                workers(
                    template(
                        container(
                            lifecycle={
                                "preStop": {"sleep": {"seconds": 5}},
                                "postStart": {
                                    "httpGet": {
                                        "port": 80,
                                        "host": "localhost",
                                        "httpHeaders": [{"name": "X", "value": "1"}],
                                    }
                                },
                            }
                        ),
                        dnsPolicy="None",
                        dnsConfig={
                            "nameservers": ["1.1.1.1"],
                            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
                        },
                        hostAliases=[{"ip": "10.0.0.1", "hostnames": ["a", "b"]}],
                    )
                )
            ),
        ),
        (
            "topology spread, overhead, gates and misc pod fields",
            lws(
                workers(
                    template(
                        topologySpreadConstraints=[
                            {
                                "maxSkew": 1,
                                "topologyKey": "zone",
                                "whenUnsatisfiable": "DoNotSchedule",
                                "labelSelector": {"matchLabels": {"a": "b"}},
                            }
                        ],
                        overhead={"cpu": "250m", "memory": "120Mi"},
                        schedulingGates=[{"name": "example.com/gate"}],
                        readinessGates=[{"conditionType": "example.com/ready"}],
                        os={"name": "linux"},
                        restartPolicy="Always",
                        serviceAccountName="sa",
                        subdomain="sub",
                        shareProcessNamespace=True,
                        enableServiceLinks=False,
                        resources={"limits": {"cpu": "4"}},
                    )
                )
            ),
        ),
        (
            "resize policy and resource claims",
            lws(
                workers(
                    template(
                        container(
                            resizePolicy=[{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                            resources={"claims": [{"name": "gpu"}], "limits": {"cpu": "2"}},
                        ),
                        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
                    )
                )
            ),
        ),
        ("rollout fields are not part of the revision", rollout_variant()),
        ("longest valid name", lws(workers(), name="n" * 63)),
        # v1.0 deletes maxGroupRestarts from the patch; the served module does not know the field and
        # drops it while decoding, so its answer is v1.0's (the same bytes as without a budget).
        ("restart budget 0", lws(workers(size=2, maxGroupRestarts=0))),
        ("restart budget 3", lws(workers(size=2, maxGroupRestarts=3))),
        (
            "restart budget with leader template and policy",
            lws(
                workers(
                    leaderTemplate=template(container("leader")),
                    size=4,
                    restartPolicy="RecreateGroupAfterStart",
                    maxGroupRestarts=2147483647,
                )
            ),
        ),
    ]
    cases = [{"id": case_id, "lws": obj, "revisionKey": ""} for case_id, obj in rows]
    cases += numbering_cases()
    cases += upstream_manifests()
    return cases


def rollout_variant() -> dict[str, Any]:
    obj = lws(
        {
            **workers(),
            "replicas": 7,
            "startupPolicy": "LeaderReady",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxSurge": "50%", "maxUnavailable": 2, "partition": 1},
            },
        },
        labels={"team": "a"},
        annotations={"leaderworkerset.sigs.k8s.io/exclusive-topology": "zone"},
    )
    obj["status"] = {"replicas": 3}
    return obj


def existing_revision(
    number: int, key: str, controller_uid: str | None, name: str = "sample"
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"{name}-old{number}",
        "namespace": "default",
        "labels": {
            "leaderworkerset.sigs.k8s.io/name": name,
            "leaderworkerset.sigs.k8s.io/template-revision-hash": key,
        },
        "resourceVersion": "1",
    }
    if controller_uid is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "name": name,
                "uid": controller_uid,
                "controller": True,
            }
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": meta,
        "data": {},
        "revision": number,
    }


def numbering_cases() -> list[dict[str, Any]]:
    mixed = [
        existing_revision(3, "aaa", UID),
        existing_revision(7, "bbb", "someone-else"),
        existing_revision(5, "ccc", None),
    ]
    other_set = [existing_revision(9, "ddd", UID, name="other")]
    return [
        {
            "id": "revision number counts owned and orphaned revisions",
            "lws": lws(workers()),
            "revisionKey": "",
            "existing": mixed,
        },
        {
            "id": "forced key keeps the hash in the name",
            "lws": lws(workers()),
            "revisionKey": "7f5c9d8b4",
            "existing": mixed,
        },
        {
            "id": "revisions of another set are not counted",
            "lws": lws(workers()),
            "revisionKey": "",
            "existing": other_set,
        },
    ]


def _upstream_files(folder: str, pattern: str, *, minimum: int) -> list[Path]:
    """Upstream's files, or an exit naming the folder: golden vectors without them would silently
    lose the upstream cases."""
    found = upstream.files(folder, pattern)
    if len(found) < minimum:
        sys.exit(
            f"only {len(found)} {pattern} files under {upstream.upstream_dir() / folder} "
            f"(at least {minimum} expected; set {upstream.ENV_VAR} to the upstream data directory)"
        )
    return found


def upstream_manifests() -> list[dict[str, Any]]:
    cases = []
    for directory in ("samples", "examples"):
        for path in _upstream_files(directory, "*.yaml", minimum=8):
            for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
                if not isinstance(doc, dict) or doc.get("kind") != "LeaderWorkerSet":
                    continue
                doc = copy.deepcopy(doc)
                doc["metadata"].setdefault("namespace", "default")
                doc["metadata"]["uid"] = UID
                cases.append(
                    {"id": f"upstream {directory}/{path.name}#{index}", "lws": doc, "revisionKey": ""}
                )
    return cases


# --------------------------------------------------------------------------------------------------
# random templates over every field of the generated table: Go's real types are the judge
# --------------------------------------------------------------------------------------------------

GOFIELDS = Path(__file__).resolve().parents[2] / "src/leaderworkerset/core/gocompat/data/gofields.json"
SCALARS: dict[str, list[Any]] = {
    "string": ["", "x", "<a&b>", "ünï\u2028", "0"],
    "bool": [False, True],
    "int": [0, 1, -1, 3600],
    "uint": [0, 1],
    "float": [0, 0.5],
    "quantity": ["0", "1000m", "1Gi", "0.5", "1e3", "+2", 3, "100Mi"],
    "intorstring": [0, 8080, "http", "25%", ""],
    "time": [None, "2024-02-29T12:00:00Z", "2024-02-29T12:00:00.5+01:00", "0001-01-01T00:00:00Z"],
    "rawjson": [{"f:metadata": {"f:name": {}}}, {}],
}


V1_ONLY_FIELDS = frozenset({"maxGroupRestarts"})


class RandomValues:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.structs = json.loads(GOFIELDS.read_text())["structs"]

    def value(self, go_type: dict[str, Any], depth: int) -> Any:
        kind = go_type["kind"]
        if kind in SCALARS:
            return self.rng.choice(SCALARS[kind])
        if kind == "ptr":
            return None if self.rng.random() < 0.2 else self.value(go_type["elem"], depth)
        if kind == "slice":
            choice = self.rng.random()
            if choice < 0.15:
                return None
            if choice < 0.3 or depth <= 0:
                return []
            return [self.value(go_type["elem"], depth - 1) for _ in range(self.rng.randint(1, 2))]
        if kind == "map":
            choice = self.rng.random()
            if choice < 0.15:
                return None
            if choice < 0.3 or depth <= 0:
                return {}
            return {f"k{i}": self.value(go_type["elem"], depth - 1) for i in range(self.rng.randint(1, 2))}
        return self.struct(go_type["name"], depth - 1)

    def struct(self, name: str, depth: int) -> dict[str, Any] | None:
        if depth < 0:
            return {}
        out: dict[str, Any] = {}
        for field in self.structs[name]["fields"]:
            # v1.0-only fields are unknown to the served upstream module, so they cannot be judged.
            if field["json"] in V1_ONLY_FIELDS:
                continue
            if self.rng.random() < 0.25:
                out[field["json"]] = self.value(field["type"], depth)
        return out


def random_template_cases(rng: random.Random, count: int) -> list[dict[str, Any]]:
    values = RandomValues(rng)
    root = json.loads(GOFIELDS.read_text())["roots"]["LeaderWorkerTemplate"]
    cases = []
    for index in range(count):
        template = values.struct(root, 7) or {}
        cases.append(
            {
                "id": f"random template {index}",
                "lws": lws({"leaderWorkerTemplate": template}),
                "revisionKey": "",
            }
        )
    return cases


# --------------------------------------------------------------------------------------------------
# DisaggregatedSet revisions: typed Go encoding (struct order, exact integers) of role templates
# --------------------------------------------------------------------------------------------------


def ds_cases(revisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # A DisaggregatedSet hashes the typed template, budget included (v1.0's ComputeRevision keeps
    # it), which the served module cannot render: templates with a budget are left out here.
    templates = [
        (row["id"], row["lws"]["spec"].get("leaderWorkerTemplate"))
        for row in revisions
        if not row["id"].startswith("upstream")
        and "existing" not in row
        and not V1_ONLY_FIELDS & set(row["lws"]["spec"].get("leaderWorkerTemplate") or {})
    ]
    cases = []
    for (first_id, first), (second_id, second) in zip(templates, templates[1:] + templates[:1], strict=True):
        roles = [
            {"name": "prefill", "spec": {"replicas": 2, "leaderWorkerTemplate": first}},
            {"name": "decode", "metadata": {"labels": {"a": "b"}}, "spec": {"leaderWorkerTemplate": second}},
        ]
        cases.append({"id": f"{first_id} + {second_id}", "roles": roles})
    cases.append({"id": "single role", "roles": [{"name": "solo", "spec": {}}]})
    cases.append({"id": "no roles", "roles": []})
    for path in _upstream_files("samples", "disaggregatedset_*.yaml", minimum=2):
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if isinstance(doc, dict) and doc.get("kind") == "DisaggregatedSet":
                cases.append({"id": f"upstream samples/{path.name}#{index}", "roles": doc["spec"]["roles"]})
    return cases


# --------------------------------------------------------------------------------------------------
# semantic matching: revisions whose bytes differ from what we would write today
# --------------------------------------------------------------------------------------------------


def semantic_cases() -> list[dict[str, Any]]:
    base = lws(workers(template(container(resources={"limits": {"cpu": "1"}})), size=2))
    shared = {**base, "spec": {**base["spec"], "networkConfig": {"subdomainPolicy": "Shared"}}}
    budgeted = copy.deepcopy(base)
    budgeted["spec"]["leaderWorkerTemplate"]["maxGroupRestarts"] = 4
    sorted_patch = (
        '{"spec":{"leaderWorkerTemplate":{"$patch":"replace","size":2,"workerTemplate":{"metadata":{},'
        '"spec":{"containers":[{"image":"nginx:1.27","name":"nginx","resources":{"limits":{"cpu":"1"}}}]}}},'
        '"networkConfig":{"$patch":"replace","subdomainPolicy":"Shared"}}}'
    )
    return [
        {"id": "identical bytes", "lws": base, "stored": sorted_patch},
        # A revision written by a build of ours that still hashed the restart budget: the same
        # revision for v1.0, whatever budget the live set has now.
        {
            "id": "revision storing a restart budget, live budget changed",
            "lws": budgeted,
            "stored": sorted_patch.replace('"size":2', '"maxGroupRestarts":1,"size":2'),
        },
        {
            "id": "revision storing a restart budget, live budget unset",
            "lws": base,
            "stored": sorted_patch.replace('"size":2', '"maxGroupRestarts":1,"size":2'),
        },
        {"id": "live restart budget, identical bytes", "lws": budgeted, "stored": sorted_patch},
        {
            "id": "old revision with creationTimestamp null",
            "lws": base,
            "stored": sorted_patch.replace('"metadata":{}', '"metadata":{"creationTimestamp":null}'),
        },
        {
            "id": "struct-ordered keys",
            "lws": base,
            "stored": '{"spec":{"leaderWorkerTemplate":{"workerTemplate":{"metadata":{},'
            '"spec":{"containers":[{"name":"nginx","image":"nginx:1.27","resources":{"limits":{"cpu":"1"}}}]}},"size":2,"$patch":"replace"},'
            '"networkConfig":{"subdomainPolicy":"Shared","$patch":"replace"}}}',
        },
        {"id": "different image", "lws": base, "stored": sorted_patch.replace("nginx:1.27", "nginx:1.28")},
        {
            "id": "non-canonical quantity",
            "lws": base,
            "stored": sorted_patch.replace('"cpu":"1"', '"cpu":"1000m"'),
        },
        {
            "id": "unknown field in stored template",
            "lws": base,
            "stored": sorted_patch.replace('"size":2', '"size":2,"legacy":true'),
        },
        {
            "id": "stored empty env list",
            "lws": base,
            "stored": sorted_patch.replace('"image"', '"env":[],"image"'),
        },
        {
            "id": "very old revision without networkConfig",
            "lws": base,
            "stored": sorted_patch.split(',"networkConfig"')[0] + "}}",
        },
        {
            "id": "very old revision without networkConfig, live UniquePerReplica",
            "lws": {
                **base,
                "spec": {**base["spec"], "networkConfig": {"subdomainPolicy": "UniquePerReplica"}},
            },
            "stored": sorted_patch.split(',"networkConfig"')[0] + "}}",
        },
        {
            "id": "different subdomain policy",
            "lws": base,
            "stored": sorted_patch.replace('"Shared"', '"UniquePerReplica"'),
        },
        {
            "id": "stored network config without policy",
            "lws": base,
            "stored": sorted_patch.replace(
                '"networkConfig":{"$patch":"replace","subdomainPolicy":"Shared"}',
                '"networkConfig":{"$patch":"replace"}',
            ),
        },
        {
            "id": "merge patch without replace directive",
            "lws": base,
            "stored": '{"spec":{"leaderWorkerTemplate":{"size":2}}}',
        },
        {
            "id": "merge patch changing size",
            "lws": base,
            "stored": '{"spec":{"leaderWorkerTemplate":{"size":3}}}',
        },
        {"id": "null removes network config", "lws": base, "stored": '{"spec":{"networkConfig":null}}'},
        {"id": "invalid JSON", "lws": base, "stored": '{"spec":'},
        {"id": "patch is not an object", "lws": base, "stored": "[]"},
        {
            "id": "delete directive empties network config",
            "lws": shared,
            "stored": '{"spec":{"networkConfig":{"$patch":"delete"}}}',
        },
        {
            "id": "unknown directive",
            "lws": base,
            "stored": '{"spec":{"leaderWorkerTemplate":{"$patch":"merge","size":2}}}',
        },
        {
            "id": "different subdomain policy, live Shared explicit",
            "lws": shared,
            "stored": sorted_patch.replace('"Shared"', '"UniquePerReplica"'),
        },
        {
            "id": "nested directive map is dropped when merging",
            "lws": base,
            "stored": (
                '{"spec":{"leaderWorkerTemplate":{"subGroupPolicy":{"$patch":"replace","subGroupSize":1}}}}'
            ),
        },
        {
            "id": "null inside a new map is discarded",
            "lws": base,
            "stored": '{"spec":{"leaderWorkerTemplate":{"subGroupPolicy":{"subGroupSize":null}}}}',
        },
        {"id": "empty patch", "lws": base, "stored": "{}"},
    ]


# --------------------------------------------------------------------------------------------------
# quantities and plain JSON
# --------------------------------------------------------------------------------------------------

FIXED_QUANTITIES = [
    "0",
    "1",
    "1000m",
    "0.5",
    "1e3",
    "1E3",
    "1Gi",
    "1024Mi",
    "1.5Gi",
    "0.1",
    "100m",
    "+1",
    "-1",
    "-1000m",
    "1k",
    "1000",
    "1000000",
    "1M",
    "1Mi",
    "1.5",
    "1.",
    ".5",
    "0.0001",
    "0.000000001",
    "0.0000000001",
    "1n",
    "1u",
    "1.5n",
    "12345678901234567890",
    "123456789012345678",
    "1234567890123456789",
    "9223372036854775807",
    "9223372036854775808",
    "8Ei",
    "7Ei",
    "1Ei",
    "1E",
    "1000E",
    "1e21",
    "1e-3",
    "1e-10",
    "1.5e3",
    "10e3",
    "100e3",
    "1e2",
    "1e0",
    "1e",
    "1ki",
    "1Ki",
    "1KB",
    "",
    " 1 ",
    "1 ",
    "abc",
    "1.2.3",
    "--1",
    "+-1",
    "0x10",
    "1e+3",
    "1e+03",
    "1E-2",
    "0.5Ki",
    "0.1Ki",
    "1.Gi",
    ".Gi",
    "Gi",
    "m",
    "+",
    "-",
    ".",
    "000",
    "0001",
    "0001.000",
    "1.000",
    "100000000000000000000000",
    "1Ti",
    "1Pi",
    "1024Ki",
    "1048576",
    "1.0000000001Ki",
    "-0",
    "-0.0",
    "+0m",
    "0Gi",
    "-1Gi",
    "-1.5Gi",
    "-1024",
    "1023",
    "1024",
    "1025Ki",
    "8Gi",
    "16Ki",
    "2048",
    "1e9",
    "1e18",
    "1e19",
    "1e-9",
    "1e-12",
    "5e-324",
    "0.000000000000001Ki",
    "1.23456789e5",
    "12.5m",
    "999999999999999999",
    "999999999999999999999",
    "1e9223372036854775808",
    "1e-2147483649",
    "123Mi",
    "3.14159",
    "-3.14159",
    "1m1",
    "1 Gi",
    "\u00a02Gi",
    "1\u3000",
]


def random_quantities(rng: random.Random, count: int) -> list[str]:
    suffixes = [
        "",
        "",
        "m",
        "k",
        "M",
        "G",
        "T",
        "P",
        "E",
        "n",
        "u",
        "Ki",
        "Mi",
        "Gi",
        "Ti",
        "Pi",
        "Ei",
        "e3",
        "e-3",
        "E2",
        "e-12",
        "e20",
    ]
    out = []
    for _ in range(count):
        sign = rng.choice(["", "", "", "-", "+"])
        whole = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 20)))
        frac = (
            "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 12)))
            if rng.random() < 0.4
            else ""
        )
        out.append(sign + whole + frac + rng.choice(suffixes))
    return out


def quantity_cases(rng: random.Random) -> list[dict[str, Any]]:
    texts = FIXED_QUANTITIES + random_quantities(rng, 400)
    rows = [{"input": json.dumps(text, ensure_ascii=False)} for text in texts]
    rows += [
        {"input": raw} for raw in ("1", "0.5", "2", "1024", "null", "-7", "0.001", "1e-7", "123456789012")
    ]
    return rows


FIXED_JSON = [
    "0",
    "-0",
    "0.0",
    "1",
    "-1",
    "1.0",
    "1.5",
    "100",
    "1e2",
    "1E2",
    "1e20",
    "1e21",
    "1e22",
    "123456789e-15",
    "1e-6",
    "1e-7",
    "0.000001",
    "0.0000001",
    "1.5e-7",
    "1e-10",
    "5e-324",
    "1.7976931348623157e308",
    "9007199254740993",
    "12345678901234567890",
    "12345678901234567890123",
    "-12345678901234567890123",
    "0.1",
    "0.2",
    "0.30000000000000004",
    "2.5e+25",
    "1e400",
    "NaN",
    "true",
    "false",
    "null",
    "[]",
    "{}",
    '""',
    '"<script>&amp;</script>"',
    '"\\u2028\\u2029"',
    '"\\ud800"',
    '"\\udc00x"',
    '"\\ud83d\\ude80"',
    '"\\u0000\\u0001\\u001f\\b\\f\\n\\r\\t\\u007f"',
    '"é世界"',
    '"\\"\\\\/"',
    '{"b":1,"a":2,"A":3,"_":4,"é":5,"z":6,"$patch":"replace","aa":7,"":8}',
    '{"k":{"z":[3,{"y":1,"x":2}],"a":null}}',
    '[1,"2",[3],{"4":5}]',
    '{"\\ud800":1}',
    '{"<>&":"<>&"}',
    '{"a":1,"a":2}',
]


def random_floats(rng: random.Random, count: int) -> list[str]:
    out = []
    while len(out) < count:
        (value,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if value != value or value in (float("inf"), float("-inf")):
            continue
        out.append(repr(value))
    magnitudes = [rng.uniform(-1, 1) * 10 ** rng.randint(-12, 25) for _ in range(count)]
    out += [repr(value) for value in magnitudes]
    out += [str(rng.randint(-(2**70), 2**70)) for _ in range(count // 4)]
    return out


def gojson_cases(rng: random.Random) -> list[dict[str, Any]]:
    return [{"input": text} for text in FIXED_JSON + random_floats(rng, 200)]


def main() -> None:
    rng = random.Random(20261016)
    revisions = revision_cases() + random_template_cases(random.Random(766), 40)
    doc = {
        "revisions": revisions,
        "dsRevisions": ds_cases(revisions),
        "semantic": semantic_cases(),
        "quantities": quantity_cases(rng),
        "gojson": gojson_cases(rng),
    }
    json.dump(doc, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
