"""Install the packaged CRDs into a cluster: server-side apply, then wait until they are served."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Final

from lightkube import AsyncClient
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.types import PatchType

from leaderworkerset.api import constants as c
from leaderworkerset.crd.packaged import crd_documents

# Kubernetes' own CRD condition: the API server serves the new resource once it is True.
CRD_ESTABLISHED: Final = "Established"
DEFAULT_TIMEOUT: Final = 60.0


def crd_name(document: dict[str, Any]) -> str:
    return str(document["metadata"]["name"])


async def apply_crds(
    client: AsyncClient,
    documents: Sequence[dict[str, Any]],
    *,
    on_applied: Callable[[str], None] | None = None,
) -> list[str]:
    """Server-side apply every CRD as field manager ``lws``, forcing ownership of its fields.

    Forcing is what an installer wants: an upgrade must win over fields an older installer (or a
    ``kubectl apply``) set.
    """
    names: list[str] = []
    for document in documents:
        name = crd_name(document)
        await client.patch(
            CustomResourceDefinition,
            name,
            document,
            patch_type=PatchType.APPLY,
            field_manager=c.FIELD_MANAGER,
            force=True,
        )
        names.append(name)
        if on_applied is not None:
            on_applied(name)
    return names


async def wait_established(
    client: AsyncClient, names: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT
) -> None:
    """Return once every named CRD reports Established; ``TimeoutError`` after ``timeout`` seconds."""

    async def one(name: str) -> None:
        await client.wait(CustomResourceDefinition, name, for_conditions=[CRD_ESTABLISHED])

    async with asyncio.timeout(timeout):
        await asyncio.gather(*(one(name) for name in names))


async def install_crds(
    client: AsyncClient,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    on_applied: Callable[[str], None] | None = None,
) -> list[str]:
    """Apply the packaged CRDs and wait until the API server serves them; returns their names."""
    names = await apply_crds(client, crd_documents(), on_applied=on_applied)
    await wait_established(client, names, timeout=timeout)
    return names
