"""CRDs installed once per test cluster, exactly as `lws install` does it."""

from __future__ import annotations

import pytest
from lightkube import AsyncClient

from leaderworkerset.crd.install import install_crds


@pytest.fixture(scope="session")
async def installed_crds(kube: AsyncClient) -> list[str]:
    return await install_crds(kube)
