"""CRDs installed once per test cluster: ours exactly as `lws install` does it, and upstream's own
CRDs under renamed groups for side-by-side comparison."""

from __future__ import annotations

import pytest
from lightkube import AsyncClient

from leaderworkerset.crd.install import apply_crds, install_crds, wait_established
from tests.integration.crd.objects import upstream_crd_documents


@pytest.fixture(scope="session")
async def installed_crds(kube: AsyncClient) -> list[str]:
    return await install_crds(kube)


@pytest.fixture(scope="session")
async def upstream_crds(kube: AsyncClient) -> list[str]:
    names = await apply_crds(kube, upstream_crd_documents())
    await wait_established(kube, names)
    return names
