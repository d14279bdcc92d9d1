"""Volcano's PodGroup CRD for tests: our structural reduction in crds/scheduling.volcano.sh_podgroups.yaml."""

from __future__ import annotations

from pathlib import Path

import yaml
from lightkube import AsyncClient

from leaderworkerset.crd.install import apply_crds, wait_established

CRD_PATH = Path(__file__).resolve().parent / "crds" / "scheduling.volcano.sh_podgroups.yaml"


async def install_pod_group_crd(client: AsyncClient) -> None:
    """Apply the CRD and wait until the API server serves podgroups.scheduling.volcano.sh."""
    names = await apply_crds(client, [yaml.safe_load(CRD_PATH.read_text())])
    await wait_established(client, names)
