"""Generated bad input for the admission fuzzer: hypothesis strategies over our CRD schemas and
mutations of upstream's samples and examples, and the pods the StatefulSet controller would send.

Generation is pure and deterministic (``derandomize``, no example database): the same size gives the
same cases on every machine. Each case records which field paths its mutations touched, so a
rejection can be checked against them.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from leaderworkerset.api import constants as c
from leaderworkerset.crd.packaged import crd_documents
from tests.support import builders as b
from tests.support import upstream

Obj = dict[str, Any]
Path_ = tuple[str | int, ...]
KINDS: Final = (c.LWS_KIND, c.DS_KIND, "Pod")
DELETE: Final = object()  # the mutation removes the field

BOUNDARY_INTS: Final = (0, -1, 1, 2, 2**31 - 1, 2**31, -(2**31), 2**53, 10**6)
BOUNDARY_STRINGS: Final = (
    "", "0", "-1", "1", "50%", "100%", "101%", "-1%", "1.5%", "%", "abc%", "1e3", " 1", "2cube",
    "x" * 64, "y" * 300, "UPPER", "with space", "ü", "a/b", "a.b", "None", "Hash", "Ordinal",
    "RecreateGroupOnPodRestart", "Default", "UniquePerReplica", "LeaderReady", "true",
)  # fmt: skip
_TEMPLATES: Final = frozenset({"leaderTemplate", "workerTemplate", "template"})
# Inside an embedded pod template only the parts our handlers read are generated into.
_TEMPLATE_PATHS: Final[tuple[Path_, ...]] = (
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec", "containers"),
    ("spec", "containers", 0, "name"),
    ("spec", "containers", 0, "resources", "limits"),
    ("spec", "containers", 0, "env"),
    ("spec", "subdomain"),
    ("spec", "affinity"),
    ("spec", "initContainers"),
)
_NO_DESCENT: Final = frozenset({"volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy"})


@dataclass(frozen=True)
class Case:
    kind: str
    origin: str  # the upstream file (or builder) the object came from
    touched: tuple[str, ...]  # dotted field paths the mutations touched, indices as [n]
    mutations: tuple[str, ...]  # how: "schema", "wrong-type", "boundary", "delete"
    obj: Obj
    update: bool = False  # sent as an update of the unmutated object rather than a create
    base: Obj | None = None


def dotted(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


# ----- the CRD schemas -----------------------------------------------------------------------------


def _schemas() -> dict[str, Obj]:
    return {
        doc["spec"]["names"]["kind"]: doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for doc in crd_documents()
    }


def _child(node: Obj, part: str | int) -> Obj | None:
    if isinstance(part, int):
        items = node.get("items")
        return items if isinstance(items, dict) else None
    props = node.get("properties") or {}
    if part in props:
        return props[part]  # type: ignore[no-any-return]
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def node_at(schema: Obj, path: Path_) -> Obj | None:
    node: Obj | None = schema
    for part in path:
        if node is None:
            return None
        node = _child(node, part)
    return node


def schema_paths(schema: Obj, prefix: Path_ = (), depth: int = 0) -> Iterator[Path_]:
    """Every field path of the schema below `spec`, pod templates cut to the parts we read."""
    for key, child in (schema.get("properties") or {}).items():
        path = (*prefix, key)
        yield path
        if key in _TEMPLATES:
            yield from ((*path, *sub) for sub in _TEMPLATE_PATHS)
        elif key not in _NO_DESCENT and depth < 6:
            if child.get("type") == "array" and isinstance(child.get("items"), dict):
                yield (*path, 0)
                yield from schema_paths(child["items"], (*path, 0), depth + 1)
            else:
                yield from schema_paths(child, path, depth + 1)


# ----- values ------------------------------------------------------------------------------------

_TEXT: Final = st.text(alphabet="abcz019-._/%", max_size=12)
_JSON: Final = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | _TEXT,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_TEXT, inner, max_size=2),
    max_leaves=4,
)
WRONG_TYPE: Final = st.one_of(
    st.none(), st.booleans(), st.sampled_from(BOUNDARY_INTS), st.floats(-10, 10), _TEXT,
    st.lists(_JSON, max_size=2), st.dictionaries(_TEXT, _JSON, max_size=2),
)  # fmt: skip


def schema_values(node: Obj, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values the schema allows (by type), boundaries favoured."""
    if node.get("x-kubernetes-int-or-string"):
        return st.sampled_from(BOUNDARY_INTS) | st.sampled_from(BOUNDARY_STRINGS)
    if "enum" in node:
        return st.sampled_from(node["enum"]) | st.sampled_from(BOUNDARY_STRINGS)
    kind = node.get("type")
    if kind == "integer":
        return st.sampled_from(BOUNDARY_INTS) | st.integers(-3, 40)
    if kind == "number":
        return st.floats(-1e6, 1e6)
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        return st.sampled_from(BOUNDARY_STRINGS) | _TEXT
    if kind == "array" and isinstance(node.get("items"), dict) and depth < 3:
        return st.lists(schema_values(node["items"], depth + 1), max_size=3)
    if kind == "object" and depth < 3:
        props = node.get("properties") or {}
        if props:
            optional = {
                k: schema_values(v, depth + 1) for k, v in sorted(props.items()) if k not in _TEMPLATES
            }
            return st.fixed_dictionaries({}, optional=optional)
        if isinstance(node.get("additionalProperties"), dict):
            return st.dictionaries(_TEXT, schema_values(node["additionalProperties"], depth + 1), max_size=3)
    return _JSON


def set_at(obj: Obj, path: Path_, value: Any) -> None:
    """Set (or with DELETE remove) the value at `path`, creating missing objects and lists."""
    target: Any = obj
    for part, following in itertools.pairwise(path):
        blank: Any = [] if isinstance(following, int) else {}
        if isinstance(part, int):
            if not isinstance(target, list):
                return
            while len(target) <= part:
                target.append(copy.deepcopy(blank))
            if not isinstance(target[part], (dict, list)):
                target[part] = blank
            target = target[part]
        else:
            if not isinstance(target, dict):
                return
            if not isinstance(target.get(part), (dict, list)):
                target[part] = blank
            target = target[part]
    last = path[-1]
    if isinstance(last, int):
        if isinstance(target, list):
            if value is DELETE:
                if last < len(target):
                    del target[last]
                return
            while len(target) <= last:
                target.append({})
            target[last] = value
    elif isinstance(target, dict):
        if value is DELETE:
            target.pop(last, None)
        else:
            target[last] = value


def existing_paths(obj: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield (*prefix, key)
            yield from existing_paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj[:3]):
            yield (*prefix, index)
            yield from existing_paths(value, (*prefix, index))


# ----- the objects the mutations start from ------------------------------------------------------


def upstream_objects(kind: str) -> list[tuple[str, Obj]]:
    """Every object of `kind` in upstream's samples and examples, with its file name."""
    found: list[tuple[str, Obj]] = []
    for path in [*upstream.files("samples"), *upstream.files("examples")]:
        for doc in yaml.safe_load_all(Path(path).read_text()):
            if isinstance(doc, dict) and doc.get("kind") == kind:
                found.append((path.name, doc))
    return found


def pod_bases() -> list[tuple[str, Obj]]:
    """Pods as the StatefulSet controller creates them from our templates: leaders and workers,
    with subgroups, TPUs, exclusive placement, UniquePerReplica and Hash identity."""
    hash_leader = b.leader("sample-0").annotation(c.ANNOTATION_GROUP_IDENTITY, c.GROUP_IDENTITY_HASH)
    return [
        ("leader", b.leader("sample-0", "sample").obj()),
        ("worker", b.worker("sample-0-1", "0", "sample").obj()),
        ("leader-subgroup", b.leader("sample-0", "sample").subgroup_size("2").obj()),
        ("worker-subgroup", b.worker("sample-0-3", "0", "sample").subgroup_size("2").obj()),
        ("leader-tpu", b.leader("sample-0", "sample").leader_requests_tpus().spec(_tpu_spec()).obj()),
        ("worker-tpu", b.worker("sample-0-2", "0", "sample").spec(_tpu_spec()).obj()),
        (
            "leader-exclusive",
            b.leader("sample-0", "sample").annotation(c.ANNOTATION_EXCLUSIVE_TOPOLOGY, "zone").obj(),
        ),
        (
            "leader-unique-subdomain",
            b.leader("sample-0", "sample")
            .annotation(c.ANNOTATION_SUBDOMAIN_POLICY, "UniquePerReplica")
            .obj(),
        ),
        ("leader-hash", hash_leader.obj()),
    ]


def _tpu_spec() -> Obj:
    return b.tpu_pod_spec(b.tpu_container(), subdomain="sample")


POD_KEYS: Final = (
    ("metadata", "labels", c.LABEL_SET_NAME),
    ("metadata", "labels", c.LABEL_WORKER_INDEX),
    ("metadata", "labels", c.LABEL_GROUP_INDEX),
    ("metadata", "labels", c.LABEL_GROUP_KEY),
    ("metadata", "labels", c.LABEL_STATEFULSET_POD_NAME),
    ("metadata", "annotations", c.ANNOTATION_SIZE),
    ("metadata", "annotations", c.ANNOTATION_SUBGROUP_SIZE),
    ("metadata", "annotations", c.ANNOTATION_SUBGROUP_POLICY_TYPE),
    ("metadata", "annotations", c.ANNOTATION_SUBDOMAIN_POLICY),
    ("metadata", "annotations", c.ANNOTATION_EXCLUSIVE_TOPOLOGY),
    ("metadata", "annotations", c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY),
    ("metadata", "annotations", c.ANNOTATION_LEADER_REQUESTS_TPUS),
    ("metadata", "annotations", c.ANNOTATION_GROUP_IDENTITY),
    ("metadata", "annotations", c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING),
    ("metadata", "annotations", c.ANNOTATION_LEADER_NAME),
    ("metadata", "name"),
    ("spec", "subdomain"),
    ("spec", "containers", 0, "env"),
    ("spec", "containers", 0, "resources", "limits", c.TPU_RESOURCE_NAME),
    ("spec", "containers", 0, "name"),
    ("spec", "initContainers"),
)
POD_STRINGS: Final = (
    st.sampled_from(BOUNDARY_STRINGS) | _TEXT | st.sampled_from(("sample-0", "sample-0-1", "sample"))
)


# ----- strategies ----------------------------------------------------------------------------------


@st.composite
def _mutated(
    draw: st.DrawFn,
    kind: str,
    bases: list[tuple[str, Obj]],
    paths: list[Path_],
    values_at: Callable[[Path_], st.SearchStrategy[Any]],
) -> Case:
    origin, base = draw(st.sampled_from(bases))
    obj = copy.deepcopy(base)
    touched: list[str] = []
    how: list[str] = []
    for _ in range(draw(st.integers(1, 2))):
        choices = paths + [p for p in existing_paths(obj) if p[0] in ("spec", "metadata")]
        path = draw(st.sampled_from(choices))
        mutation = draw(st.sampled_from(("schema", "schema", "schema", "wrong-type", "boundary", "delete")))
        if mutation == "delete":
            value: Any = DELETE
        elif mutation == "wrong-type":
            value = draw(WRONG_TYPE)
        elif mutation == "boundary":
            value = draw(st.sampled_from(BOUNDARY_INTS) | st.sampled_from(BOUNDARY_STRINGS))
        else:
            value = draw(values_at(path))
        set_at(obj, path, value)
        touched.append(dotted(path))
        how.append(mutation)
    update = kind != "Pod" and draw(st.integers(0, 3)) == 0
    return Case(
        kind, origin, tuple(touched), tuple(how), obj, update, copy.deepcopy(base) if update else None
    )


def strategy(kind: str) -> st.SearchStrategy[Case]:
    if kind == "Pod":
        bases = pod_bases()

        def pod_values(path: Path_) -> st.SearchStrategy[Any]:
            if path[-1] == "env":
                return st.lists(
                    st.fixed_dictionaries({"name": st.sampled_from(_LWS_ENV) | _TEXT, "value": _TEXT})
                )
            return POD_STRINGS

        return _mutated(kind, bases, list(POD_KEYS), pod_values)
    schema = _schemas()[kind]
    bases = upstream_objects(kind)
    if kind == c.LWS_KIND:
        bases.append(("builder", b.LeaderWorkerSetBuilder("default", "built").obj()))
    paths = [p for p in schema_paths(schema) if p[0] in ("spec",)] + [
        ("metadata", "name"),
        ("metadata", "labels"),
        ("metadata", "annotations"),
    ]

    def crd_values(path: Path_) -> st.SearchStrategy[Any]:
        node = node_at(schema, path)
        return schema_values(node) if node is not None else _JSON

    return _mutated(kind, bases, paths, crd_values)


_LWS_ENV: Final = (
    "LWS_LEADER_ADDRESS",
    "LWS_GROUP_SIZE",
    "LWS_WORKER_INDEX",
    "TPU_WORKER_ID",
    "TPU_WORKER_HOSTNAMES",
)


def generate(kind: str, count: int) -> list[Case]:
    """`count` cases of `kind`, the same ones on every run."""
    cases: list[Case] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy(kind))
    def collect(case: Case) -> None:
        cases.append(case)

    collect()
    return cases


# ----- reading rejections ---------------------------------------------------------------------

FIELD_PATH: Final = re.compile(r"\b(?:spec|metadata)(?:\.[A-Za-z0-9_/\-]+|\[[^\]]*\])*\b")
_INDEX: Final = re.compile(r"\[[^\]]*\]")


# The API server's typed decode of metadata names the Go field: "Go struct field ObjectMeta.labels".
_OBJECT_META: Final = re.compile(r"Go struct field ObjectMeta\.(\w+)")
# Labels and annotations of pods are named as such in our pod-webhook denials.
_POD_KEY: Final = re.compile(r"\b(annotation|label) ([\w./-]+) of pod")


def fields_named(message: str) -> list[str]:
    named = FIELD_PATH.findall(message) + [f"metadata.{name}" for name in _OBJECT_META.findall(message)]
    return named + [f"metadata.{kind}s.{key}" for kind, key in _POD_KEY.findall(message)]


def _norm(path: str) -> str:
    return _INDEX.sub("", path).lower()


def names_touched(message: str, touched: tuple[str, ...]) -> bool:
    """Whether a field path in the message is one the mutations touched, or an ancestor or a
    descendant of one (a rule on `size` may report `spec.leaderWorkerTemplate.size`, a missing
    parent its child)."""
    named = [_norm(f) for f in fields_named(message)]
    for path in (_norm(t) for t in touched):
        for field in named:
            if field == path or field.startswith(path + ".") or path.startswith(field + "."):
                return True
    return False
