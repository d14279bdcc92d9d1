"""``lws crds`` (print the CRDs) and the kubeconfig options shared with ``lws install``.

The CRDs are the manifests packaged with ``leaderworkerset.crd`` (generated at development time), so
what a user installs is byte-for-byte what ``deploy/crds/`` holds. ``cli/main.py`` mounts the command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import httpx2
import typer
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from leaderworkerset.api import constants as c
from leaderworkerset.crd.install import DEFAULT_TIMEOUT
from leaderworkerset.crd.packaged import crd_texts

KubeconfigOption = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="Kubeconfig file (default: in-cluster config, then $KUBECONFIG, then ~/.kube/config).",
        exists=True,
        dir_okay=False,
    ),
]
ContextOption = Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.")]


def crds_command() -> None:
    """Print the CustomResourceDefinitions as YAML (pipe to `kubectl apply --server-side -f -`)."""
    for text in crd_texts():
        sys.stdout.write(text)


def client_for(kubeconfig: Path | None, context: str | None) -> AsyncClient:
    """A client writing as field manager `lws`."""
    config = KubeConfig.from_file(str(kubeconfig)) if kubeconfig is not None else KubeConfig.from_env()
    # The CRDs are large (over a megabyte each); allow the API server time to validate and store them.
    return AsyncClient(
        config=config.get(context_name=context),
        field_manager=c.FIELD_MANAGER,
        timeout=httpx2.Timeout(DEFAULT_TIMEOUT),
    )
