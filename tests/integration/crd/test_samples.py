"""Every upstream sample and example object is accepted with our CRDs and stored as upstream's would.

Two ways to know what upstream's CRD stores: predicted offline (prune + default with UPSTREAM's
schema; the same pruner/defaulter applied with OUR schema must reproduce exactly what this real API
server stored, which checks the predictor), and measured (upstream's CRD installed under a renamed
group, the same object sent to it). The only allowed difference is the v1.0 CRD default of
groupIdentity.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from lightkube import AsyncClient, codecs

from leaderworkerset.api import constants as c
from leaderworkerset.crd.structural import prune_and_default
from tests.integration.crd.objects import (
    OUR_KINDS,
    UPSTREAM_KINDS,
    diff_paths,
    for_upstream,
    our_schema,
    upstream_documents,
    upstream_schema,
)
from tests.support import upstream

pytestmark = pytest.mark.cluster

# v1.0 defaults our CRD applies and the pre-v1.0 snapshot's CRD cannot (groupIdentity
# defaults to Ordinal in the CRD).
V1_DEFAULTED = re.compile(r"^(\.roles\[\d+\]\.spec)?\.groupIdentity$")

# The known minimum of upstream's sample and example documents (29, 18 of them our kinds): fewer
# means the data is absent or was cut down, and the tests fail or skip loudly instead of shrinking.
_DOCUMENTS = [
    pytest.param(obj, id=f"{source}#{index} {obj['kind']}/{obj['metadata']['name']}")
    for source, index, obj in upstream_documents()
]
DOCUMENTS = upstream.params(_DOCUMENTS, minimum=29, what="upstream sample documents")
OUR_DOCUMENTS = upstream.params(
    [p for p in _DOCUMENTS if p.values[0]["kind"] in OUR_KINDS], minimum=18, what="upstream LWS/DS documents"
)


async def _create(kube: AsyncClient, obj: dict[str, Any], namespace: str) -> dict[str, Any] | None:
    """Create ``obj`` in ``namespace``; return what the API server stored for our kinds."""
    obj = copy.deepcopy(obj)
    obj["metadata"]["namespace"] = namespace
    resource = OUR_KINDS.get(obj["kind"])
    if resource is None:
        await kube.create(codecs.from_dict(obj), namespace=namespace)
        return None
    await kube.create(resource.from_dict(obj), namespace=namespace)
    stored = await kube.get(resource, obj["metadata"]["name"], namespace=namespace)
    result: dict[str, Any] = stored.to_dict()
    return result


@pytest.mark.parametrize("obj", DOCUMENTS)
async def test_upstream_object_is_accepted_and_stored_like_upstream(
    kube: AsyncClient, namespace: str, installed_crds: list[str], obj: dict[str, Any]
) -> None:
    upstream.check_case(obj)
    stored = await _create(kube, obj, namespace)
    if stored is None:
        return  # a built-in object shipped with the example (Service, HPA, RBAC): accepted is enough

    kind = obj["kind"]
    ours = prune_and_default(obj, our_schema(kind))
    assert stored["spec"] == ours["spec"], "offline prune/default disagrees with the API server"

    theirs = prune_and_default(obj, upstream_schema(kind))
    extra = diff_paths(theirs["spec"], stored["spec"])
    assert [p for p in extra if not V1_DEFAULTED.match(p)] == []
    if kind == c.LWS_KIND and "groupIdentity" not in obj["spec"]:
        assert stored["spec"]["groupIdentity"] == c.GROUP_IDENTITY_ORDINAL

    for key in ("labels", "annotations"):
        assert stored["metadata"].get(key) == obj["metadata"].get(key)


@pytest.mark.parametrize("obj", OUR_DOCUMENTS)
async def test_upstream_object_is_stored_like_upstreams_crd_stores_it(
    kube: AsyncClient,
    namespace: str,
    installed_crds: list[str],
    upstream_crds: list[str],
    obj: dict[str, Any],
) -> None:
    upstream.check_case(obj)
    ours = await _create(kube, obj, namespace)
    theirs_obj = for_upstream(copy.deepcopy(obj))
    theirs_obj["metadata"] = {**obj["metadata"], "namespace": namespace}
    resource = UPSTREAM_KINDS[obj["kind"]]
    await kube.create(resource.from_dict(theirs_obj), namespace=namespace)
    theirs = (await kube.get(resource, obj["metadata"]["name"], namespace=namespace)).to_dict()

    assert ours is not None
    extra = diff_paths(theirs["spec"], ours["spec"])
    assert [p for p in extra if not V1_DEFAULTED.match(p)] == []
