"""``lws rollout pause|resume|undo|history NAME``: rollout control of one LeaderWorkerSet.

Pause and resume merge-patch the `leaderworkerset.dev/rollout-paused` annotation; the controller
does the holding (core/rollout/control.py). Undo writes the templates of an existing
ControllerRevision back into the spec, an ordinary update (with the read's resourceVersion, so a
concurrent change conflicts instead of being overwritten) that the controller then rolls out.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.gocompat.gonormalize import normalize
from leaderworkerset.core.objects import MutableObj, is_hash, labels_of, metadata, revision_key_of
from leaderworkerset.core.rollout.undo import UndoError, history, revision_templates, undo_target, undone
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import CONTROLLER_REVISIONS, LEADERWORKERSETS, STATEFULSETS

app = typer.Typer(
    help="Pause, resume, undo and list the rollouts of a LeaderWorkerSet.", no_args_is_help=True
)

NameArg = Annotated[str, typer.Argument(help="LeaderWorkerSet name.")]
NamespaceOpt = Annotated[str, typer.Option("--namespace", "-n")]
KubeconfigOpt = Annotated[str | None, typer.Option(help="Kubeconfig path (default: $KUBECONFIG).")]


class RolloutCommandError(Exception):
    """Shown as one line on stderr, exit 1."""


def template_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """A unified diff of the two objects' templates, both in Go's view (so defaults show no noise)."""

    def lines(obj: Mapping[str, Any]) -> list[str]:
        spec = obj.get("spec") or {}
        view = {
            "leaderWorkerTemplate": normalize(spec.get("leaderWorkerTemplate"), "LeaderWorkerTemplate"),
            "networkConfig": normalize(spec.get("networkConfig") or {}, "NetworkConfig"),
        }
        return yaml.safe_dump(view, sort_keys=True).splitlines()

    diff = difflib.unified_diff(lines(before), lines(after), "live", "undo", lineterm="", n=2)
    return "\n".join(diff)


def _run(options: ClientOptions, work: Callable[[KubeClient], Awaitable[str]]) -> None:
    async def main() -> str:
        client = new_client(options)
        try:
            return await work(client)
        finally:
            await client.close()

    try:
        typer.echo(asyncio.run(main()))
    except (RolloutCommandError, UndoError) as err:
        typer.echo(f"lws rollout: {err}", err=True)
        raise typer.Exit(1) from err


async def _lws(client: KubeClient, namespace: str, name: str) -> MutableObj:
    lws = await client.get_or_none(LEADERWORKERSETS, namespace, name)
    if lws is None:
        raise RolloutCommandError(f"LeaderWorkerSet {namespace}/{name} not found")
    return lws


async def set_paused(client: KubeClient, namespace: str, name: str, paused: bool) -> str:
    await _lws(client, namespace, name)
    value = ext.ROLLOUT_PAUSED_TRUE if paused else ext.ROLLOUT_PAUSED_FALSE
    patch = {"metadata": {"annotations": {ext.ANNOTATION_ROLLOUT_PAUSED: value}}}
    try:
        await client.merge_patch(LEADERWORKERSETS, namespace, name, patch)
    except Exception as err:  # the webhook's denial names the rule
        raise RolloutCommandError(str(err)) from err
    return f"LeaderWorkerSet {namespace}/{name}: rollout {'paused' if paused else 'resumed'}"


async def _current_key(client: KubeClient, namespace: str, name: str) -> str:
    sts = await client.get_or_none(STATEFULSETS, namespace, name)
    if sts is None:
        raise RolloutCommandError(f"LeaderWorkerSet {namespace}/{name} has no leader StatefulSet yet")
    return labels_of(sts).get(c.LABEL_TEMPLATE_REVISION_HASH, "")


async def _revisions(client: KubeClient, namespace: str, name: str) -> list[MutableObj]:
    return await client.list(CONTROLLER_REVISIONS, namespace, f"{c.LABEL_SET_NAME}={name}")


async def undo(client: KubeClient, namespace: str, name: str, to_revision: int | None) -> str:
    lws = await _lws(client, namespace, name)
    if is_hash(lws):
        raise RolloutCommandError(
            "undo needs groupIdentity Ordinal (a Hash set rolls through its Deployment)"
        )
    current = await _current_key(client, namespace, name)
    target = undo_target(lws, await _revisions(client, namespace, name), current, to_revision)
    body = undone(lws, target)
    diff = template_diff(lws, body)
    try:
        await client.update(LEADERWORKERSETS, body)
    except Exception as err:
        raise RolloutCommandError(f"the API server refused the undo: {err}") from err
    number, key = int(target.get("revision") or 0), revision_key_of(target)
    head = f"LeaderWorkerSet {namespace}/{name}: rolled back to revision {number} ({key}) from {current}"
    return head + ("\n" + diff if diff else "\nthe templates were already equal")


def history_table(lws: MutableObj, revisions: list[MutableObj], current_key: str) -> Table:
    table = Table(title=f"LeaderWorkerSet {metadata(lws).get('namespace')}/{metadata(lws).get('name')}")
    for column in ("revision", "key", "created"):
        table.add_column(column, no_wrap=True)
    table.add_column("images", overflow="fold")  # the column that tells revisions apart: never cut
    table.add_column("")
    for revision in history(lws, revisions):
        template = revision_templates(revision).get("leaderWorkerTemplate") or {}
        images: list[str] = []
        for part in ("leaderTemplate", "workerTemplate"):
            for container in ((template.get(part) or {}).get("spec") or {}).get("containers") or []:
                if container.get("image") and container["image"] not in images:
                    images.append(str(container["image"]))
        table.add_row(
            str(revision.get("revision") or 0),
            revision_key_of(revision),
            str(metadata(revision).get("creationTimestamp") or ""),
            "\n".join(images),
            "current" if revision_key_of(revision) == current_key else "",
        )
    return table


async def _history(client: KubeClient, namespace: str, name: str, console: Console) -> str:
    lws = await _lws(client, namespace, name)
    current = await _current_key(client, namespace, name)
    with console.capture() as captured:
        console.print(history_table(lws, await _revisions(client, namespace, name), current))
    return captured.get().rstrip("\n")


@app.command("pause")
def pause_command(
    name: NameArg, namespace: NamespaceOpt = "default", kubeconfig: KubeconfigOpt = None
) -> None:
    """Hold the rollout at its current step (partition and surge stay; scaling goes on)."""
    _run(ClientOptions(kubeconfig=kubeconfig), lambda client: set_paused(client, namespace, name, True))


@app.command("resume")
def resume_command(
    name: NameArg, namespace: NamespaceOpt = "default", kubeconfig: KubeconfigOpt = None
) -> None:
    """Let a paused rollout go on from where it stopped."""
    _run(ClientOptions(kubeconfig=kubeconfig), lambda client: set_paused(client, namespace, name, False))


@app.command("undo")
def undo_command(
    name: NameArg,
    namespace: NamespaceOpt = "default",
    kubeconfig: KubeconfigOpt = None,
    to_revision: Annotated[
        int | None,
        typer.Option("--to-revision", help="ControllerRevision number (see `lws rollout history`)."),
    ] = None,
) -> None:
    """Write the previous revision's templates back into the spec and print what changed."""
    _run(ClientOptions(kubeconfig=kubeconfig), lambda client: undo(client, namespace, name, to_revision))


@app.command("history")
def history_command(
    name: NameArg, namespace: NamespaceOpt = "default", kubeconfig: KubeconfigOpt = None
) -> None:
    """List the ControllerRevisions of the set, oldest first, marking the current one."""
    console = Console()
    _run(ClientOptions(kubeconfig=kubeconfig), lambda client: _history(client, namespace, name, console))
