"""``lws crds`` (print the CRDs) and ``lws install`` (apply them to a cluster).

Both read the manifests packaged with ``leaderworkerset.crd`` (generated at development time), so
what a user installs is byte-for-byte what ``deploy/crds/`` holds. The two functions are plain
Typer commands; ``cli/main.py`` mounts them at the top level.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import httpx2
import typer
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig
from lightkube.core.exceptions import ApiError, ConfigError

from leaderworkerset.api import constants as c
from leaderworkerset.crd.install import DEFAULT_TIMEOUT, install_crds
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
TimeoutOption = Annotated[
    float, typer.Option("--timeout", help="Seconds to wait for the CRDs to become Established.")
]


def crds_command() -> None:
    """Print the CustomResourceDefinitions as YAML (pipe to `kubectl apply --server-side -f -`)."""
    for text in crd_texts():
        sys.stdout.write(text)


def install_command(
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT,
) -> None:
    """Apply the CRDs with server-side apply (field manager `lws`) and wait until they are served."""
    try:
        asyncio.run(_install(kubeconfig, context, timeout))
    except TimeoutError:
        _fail(f"CRDs not Established within {timeout:.0f}s")
    except ConfigError as err:
        _fail(f"no usable kubeconfig: {err}")
    except ApiError as err:
        _fail(f"the API server refused the CRDs: {err.status.message}")


def _fail(message: str) -> NoReturn:
    typer.echo(f"lws install: {message}", err=True)
    raise typer.Exit(1)


def _client(kubeconfig: Path | None, context: str | None) -> AsyncClient:
    config = KubeConfig.from_file(str(kubeconfig)) if kubeconfig is not None else KubeConfig.from_env()
    # The CRDs are large (over a megabyte each); allow the API server time to validate and store them.
    return AsyncClient(
        config=config.get(context_name=context),
        field_manager=c.FIELD_MANAGER,
        timeout=httpx2.Timeout(DEFAULT_TIMEOUT),
    )


async def _install(kubeconfig: Path | None, context: str | None, timeout: float) -> None:
    client = _client(kubeconfig, context)
    try:

        def applied(name: str) -> None:
            typer.echo(f"customresourcedefinition/{name} serverside-applied")

        names = await install_crds(client, timeout=timeout, on_applied=applied)
        for name in names:
            typer.echo(f"customresourcedefinition/{name} established")
    finally:
        await client.close()
