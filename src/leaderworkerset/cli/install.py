"""``lws install`` and ``lws uninstall``: the in-cluster install.

``lws install`` server-side applies the CRDs (and waits until they are served), then the objects of
``deploy/manifests/install.yaml`` rendered for ``--image``/``--namespace`` (namespace, ServiceAccount,
RBAC, ConfigMap, Secret, Services, the manager Deployment, webhook configurations), and waits until
the Deployment is available and the webhooks are callable. ``--crds-only`` is the former behaviour.
Without ``--image`` it installs the published image of this version; while none is published it
refuses before applying anything and says how to build and load one (``install/image.py``).
``lws uninstall`` deletes the same objects in reverse order and keeps the CRDs unless
``--delete-crds`` (which deletes every LeaderWorkerSet and its pods).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Annotated, NoReturn

import typer
from lightkube import AsyncClient
from lightkube.core.exceptions import ApiError, ConfigError
from lightkube.resources.core_v1 import Namespace

from leaderworkerset.api import constants as c
from leaderworkerset.cli.crds import ContextOption, KubeconfigOption, client_for
from leaderworkerset.crd.install import DEFAULT_TIMEOUT, apply_crds, wait_established
from leaderworkerset.crd.packaged import crd_documents
from leaderworkerset.install import apply as installer
from leaderworkerset.install import rbac
from leaderworkerset.install.image import NoPublishedImageError, default_image
from leaderworkerset.install.manifests import InstallOptions, render

ImageOption = Annotated[
    str | None,
    typer.Option(
        "--image", help="Manager image (required until one is published: hack/build-image.sh builds it)."
    ),
]
NamespaceOption = Annotated[str, typer.Option("--namespace", "-n", help="Namespace of the manager.")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Server-side dry run: the API server validates, nothing is stored.")
]


def _fail(command: str, message: str) -> NoReturn:
    typer.echo(f"lws {command}: {message}", err=True)
    raise typer.Exit(1)


def install_command(
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    image: ImageOption = None,
    namespace: NamespaceOption = c.DEFAULT_NAMESPACE,
    replicas: Annotated[int, typer.Option("--replicas", min=1, help="Manager replicas.")] = 2,
    dry_run: DryRunOption = False,
    crds_only: Annotated[bool, typer.Option("--crds-only", help="Apply the CRDs and nothing else.")] = False,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Wait for the Deployment and the webhooks.")
    ] = True,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait at each stage.")
    ] = DEFAULT_TIMEOUT,
    quarantine_taints: Annotated[
        bool,
        typer.Option(
            "--quarantine-taints",
            help="Grant node patch for node quarantine's taint mode (quarantine-mode: Taint).",
        ),
    ] = False,
) -> None:
    """Install the CRDs, RBAC, manager Deployment, Services and webhooks (server-side apply as `lws`)."""
    if image is None and not crds_only:
        # Refused before anything is applied: a Deployment of an image nobody can pull helps no one.
        try:
            image = default_image()
        except NoPublishedImageError as err:
            _fail("install", str(err))
    options = InstallOptions(namespace=namespace, replicas=replicas)
    if quarantine_taints:
        options = replace(options, features=(*options.features, rbac.Feature.QUARANTINE_TAINTS))
    if image is not None:
        options = replace(options, image=image)
    try:
        asyncio.run(_install(client_for(kubeconfig, context), options, dry_run, crds_only, wait, timeout))
    except TimeoutError:
        _fail("install", f"not ready within {timeout:.0f}s")
    except ConfigError as err:
        _fail("install", f"no usable kubeconfig: {err}")
    except ApiError as err:
        _fail("install", f"the API server refused an object: {err.status.message}")


async def _namespace_exists(client: AsyncClient, namespace: str) -> bool:
    try:
        await client.get(Namespace, namespace)
    except ApiError as err:
        if err.status.code == 404:
            return False
        raise
    return True


async def _install(
    client: AsyncClient, options: InstallOptions, dry_run: bool, crds_only: bool, wait: bool, timeout: float
) -> None:
    try:
        if dry_run:
            await installer.apply_objects(client, crd_documents(), dry_run=True, report=typer.echo)
        else:
            names = await apply_crds(
                client,
                crd_documents(),
                on_applied=lambda name: typer.echo(f"customresourcedefinition/{name} serverside-applied"),
            )
            await wait_established(client, names, timeout=timeout)
            for name in names:
                typer.echo(f"customresourcedefinition/{name} established")
        if crds_only:
            return
        objects = render(options)
        if dry_run and not await _namespace_exists(client, options.namespace):
            # A dry-run Namespace is not stored, so its objects cannot be validated inside it.
            typer.echo(f"namespace {options.namespace} does not exist yet: cluster-scoped objects only")
            objects = [o for o in objects if o["kind"] == "Namespace" or "namespace" not in o["metadata"]]
        await installer.apply_objects(client, objects, dry_run=dry_run, report=typer.echo)
        if wait and not dry_run:
            await installer.wait_ready(client, options.namespace, timeout=timeout, report=typer.echo)
    finally:
        await client.close()


def uninstall_command(
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    namespace: NamespaceOption = c.DEFAULT_NAMESPACE,
    dry_run: DryRunOption = False,
    delete_crds: Annotated[
        bool,
        typer.Option(
            "--delete-crds", help="Also delete the CRDs, and with them every LeaderWorkerSet and its pods."
        ),
    ] = False,
) -> None:
    """Remove what `lws install` created, in reverse order; the CRDs (and so the workloads) stay."""
    try:
        asyncio.run(_uninstall(client_for(kubeconfig, context), namespace, dry_run, delete_crds))
    except ConfigError as err:
        _fail("uninstall", f"no usable kubeconfig: {err}")
    except ApiError as err:
        _fail("uninstall", f"the API server refused a deletion: {err.status.message}")


async def _uninstall(client: AsyncClient, namespace: str, dry_run: bool, delete_crds: bool) -> None:
    try:
        await installer.delete_objects(
            client, render(InstallOptions(namespace=namespace)), dry_run=dry_run, report=typer.echo
        )
        if delete_crds:
            await installer.delete_objects(client, crd_documents(), dry_run=dry_run, report=typer.echo)
        else:
            typer.echo("CRDs kept (pass --delete-crds to delete them and every LeaderWorkerSet)")
    finally:
        await client.close()
