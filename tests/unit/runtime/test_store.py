"""Store and indexes: O(1) lookups stay exact across inserts, updates that move index values, deletes."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import POD_CODEC, Pod
from leaderworkerset.runtime.store import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    OWNER_UID_INDEX,
    Store,
    index_by_controller_uid,
    index_by_labels,
    index_by_namespaced_labels,
    index_by_owner_uid,
    label_values,
)
from tests.unit.runtime.builders import encode, obj, owner

SET = "leaderworkerset.sigs.k8s.io/name"
GROUP = "leaderworkerset.sigs.k8s.io/group-index"


def new_store() -> Store[dict[str, Any]]:
    return Store(
        DictCodec(),
        {
            OWNER_UID_INDEX: index_by_owner_uid,
            CONTROLLER_UID_INDEX: index_by_controller_uid,
            "set-group": index_by_labels(SET, GROUP),
            "ns-set": index_by_namespaced_labels(SET),
        },
    )


def names(objs: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def test_get_and_list_by_namespace() -> None:
    store = new_store()
    store.upsert(obj("a", "ns1"))
    store.upsert(obj("b", "ns1"))
    store.upsert(obj("c", "ns2"))
    assert store.get(ObjectKey("ns1", "a")) is not None
    assert store.get_by_name("ns2", "a") is None
    assert names(store.list("ns1")) == ["a", "b"]
    assert names(store.list()) == ["a", "b", "c"]
    assert store.keys_by_index(NAMESPACE_INDEX, "ns3") == []


@pytest.mark.parametrize(
    ("index", "value", "want"),
    [
        pytest.param("set-group", label_values("lws", "0"), ["p0", "p0-1"], id="two-label index"),
        pytest.param("set-group", label_values("lws", "1"), ["p1"], id="other group"),
        pytest.param("ns-set", label_values("default", "lws"), ["p0", "p0-1", "p1"], id="namespaced label"),
        pytest.param("ns-set", label_values("other", "lws"), [], id="namespace scoped"),
        pytest.param(OWNER_UID_INDEX, "uid-gc", ["p1"], id="non-controller owner indexed by owner uid"),
        pytest.param(CONTROLLER_UID_INDEX, "uid-gc", [], id="non-controller owner not a controller"),
        pytest.param(CONTROLLER_UID_INDEX, "uid-lws", ["p0", "p0-1"], id="controller uid"),
    ],
)
def test_indexes(index: str, value: str, want: list[str]) -> None:
    store = new_store()
    store.upsert(obj("p0", labels={SET: "lws", GROUP: "0"}, owners=[owner("lws")]))
    store.upsert(obj("p0-1", labels={SET: "lws", GROUP: "0"}, owners=[owner("lws")]))
    store.upsert(obj("p1", labels={SET: "lws", GROUP: "1"}, owners=[owner("gc", controller=False)]))
    store.upsert(obj("unlabelled"))
    assert names(store.by_index(index, value)) == want


def test_update_moves_object_between_index_values() -> None:
    store = new_store()
    store.upsert(obj("p", labels={SET: "lws", GROUP: "0"}))
    key, old = store.upsert(obj("p", rv="2", labels={SET: "lws", GROUP: "1"}))
    assert key == ObjectKey("default", "p")
    assert old is not None
    assert old["metadata"]["resourceVersion"] == "1"
    assert store.by_index("set-group", label_values("lws", "0")) == []
    assert names(store.by_index("set-group", label_values("lws", "1"))) == ["p"]
    assert store.index_values("set-group") == [label_values("lws", "1")], "empty buckets are dropped"


def test_delete_unfiles_everywhere() -> None:
    store = new_store()
    store.upsert(obj("p", labels={SET: "lws", GROUP: "0"}, owners=[owner("lws")]))
    assert store.delete(ObjectKey("default", "p")) is not None
    assert store.delete(ObjectKey("default", "p")) is None
    assert len(store) == 0
    for index in (NAMESPACE_INDEX, OWNER_UID_INDEX, "set-group", "ns-set"):
        assert store.index_values(index) == []


def test_indexer_added_later_indexes_existing_objects() -> None:
    store: Store[dict[str, Any]] = Store(DictCodec())
    store.upsert(obj("p", labels={SET: "x"}))
    store.add_indexer("set", index_by_labels(SET))
    assert names(store.by_index("set", "x")) == ["p"]
    with pytest.raises(ValueError, match="already exists"):
        store.add_indexer("set", index_by_labels(SET))


def test_unknown_index_is_an_error() -> None:
    with pytest.raises(KeyError, match="no indexer"):
        new_store().by_index("nope", "x")


def test_projection_store_reads_struct_metadata() -> None:
    pod = obj(
        "p",
        labels={SET: "lws", GROUP: "0"},
        owners=[owner("lws")],
        spec={"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
        status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    )
    store: Store[Pod] = Store(POD_CODEC, {"set-group": index_by_labels(SET, GROUP)})
    store.upsert(POD_CODEC.decode_object(encode(pod)))
    [cached] = store.by_index("set-group", label_values("lws", "0"))
    assert cached.spec.nodeName == "n1"
    assert cached.status.phase == "Running"
    assert cached.metadata.ownerReferences is not None
    assert cached.metadata.ownerReferences[0].name == "lws"


@pytest.mark.parametrize(
    "decode",
    [
        pytest.param(lambda raws: [POD_CODEC.decode_object(r) for r in raws], id="watch events"),
        pytest.param(
            lambda raws: POD_CODEC.decode_list(b'{"items":[' + b",".join(raws) + b"]}").items,
            id="list page",
        ),
    ],
)
def test_projections_share_their_label_and_annotation_strings(decode: Any) -> None:
    """Every cached pod repeats the same label keys and values; decoded copies are interned."""
    pods = [obj(n, labels={SET: "sample", GROUP: "0"}) for n in ("p1", "p2")]
    for pod in pods:
        pod["metadata"]["annotations"] = {"a.example/size": "4"}
    raws = [encode(pod) for pod in pods]
    first, second = decode(raws)
    assert first.metadata.labels == second.metadata.labels == {SET: "sample", GROUP: "0"}
    (k1, v1), (k2, v2) = next(iter(first.metadata.labels.items())), next(iter(second.metadata.labels.items()))
    assert k1 is k2
    assert v1 is v2
    (a1,), (a2,) = first.metadata.annotations, second.metadata.annotations
    assert a1 is a2
