"""``lws status NAME``: the group tree of one LeaderWorkerSet (or, by that name, of a
DisaggregatedSet), or with ``--failures`` its failure ledger.

The views themselves live in ``cli/views/`` (``lws``: the group tree, ``ds``: the role tree,
``failures``: the ledger); this module picks one, prints it and, with ``--watch``, refreshes it.
The same loop backs the live view of ``lws up``.

``-o json`` prints the same content as one document (one per change with ``--watch``). When
stdout is not a terminal, ``--watch`` prints the plain tree again on each change instead of
redrawing a live frame, so ``lws up | tee log`` keeps a readable history.
"""

from __future__ import annotations

import asyncio
import enum
import io
import json
import time
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.tree import Tree

from leaderworkerset.cli.views import ds as ds_view
from leaderworkerset.cli.views import failures as ledger_view
from leaderworkerset.cli.views import lws as lws_view
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import LEADERWORKERSETS


class Output(enum.StrEnum):
    TREE = "tree"
    JSON = "json"


async def failures_view(
    client: KubeClient, namespace: str, name: str, output: Output
) -> Table | dict[str, Any] | None:
    """The failure ledger (None when there is no such LeaderWorkerSet)."""
    lws = await client.get_or_none(LEADERWORKERSETS, namespace, name)
    if lws is None:
        return None
    configmap = await ledger_view.read_ledger(client, namespace, name)
    if output is Output.JSON:
        return ledger_view.document(namespace, name, configmap, time.time(), lws)
    return ledger_view.table(namespace, name, configmap, lws)


async def view_of(
    client: KubeClient, namespace: str, name: str, output: Output, *, failures: bool = False
) -> Tree | Table | dict[str, Any] | None:
    """The LeaderWorkerSet's group tree (or document), else the DisaggregatedSet's role tree, else
    None; with `failures`, the LeaderWorkerSet's failure ledger."""
    if failures:
        return await failures_view(client, namespace, name, output)
    snapshot = await lws_view.collect(client, namespace, name)
    if snapshot is not None:
        return lws_view.document(snapshot) if output is Output.JSON else lws_view.render(snapshot)
    ds_snapshot = await ds_view.collect(client, namespace, name)
    if ds_snapshot is None:
        return None
    if output is Output.JSON:
        return ds_view.document(ds_snapshot)
    return ds_view.render(ds_snapshot)


async def tree_of(client: KubeClient, namespace: str, name: str) -> Tree | None:
    view = await view_of(client, namespace, name, Output.TREE)
    return view if isinstance(view, Tree) else None


# Off a terminal a line is never cut or wrapped: a log keeps one line per group, for grep.
_LOG_WIDTH = 1000


def as_text(console: Console, view: Tree | Table | dict[str, Any]) -> str:
    """What one refresh prints: one JSON line, the tree wrapped at the terminal's width, or (off a
    terminal) the plain tree with no colour codes and one unwrapped line per node."""
    if isinstance(view, dict):
        return json.dumps(view, sort_keys=True) + "\n"
    if console.is_terminal:
        with console.capture() as captured:
            console.print(view)
        return captured.get()
    wide = Console(file=io.StringIO(), width=_LOG_WIDTH, color_system=None, force_terminal=False)
    wide.print(view)
    text = wide.file.getvalue()  # type: ignore[attr-defined]
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


async def show(
    options: ClientOptions,
    namespace: str,
    name: str,
    watch: bool,
    interval: float = 1.0,
    output: Output = Output.TREE,
    console: Console | None = None,
    failures: bool = False,
) -> int:
    client = new_client(options)
    console = console or Console()
    try:
        view = await view_of(client, namespace, name, output, failures=failures)
        if view is None:
            kinds = "LeaderWorkerSet" if failures else "LeaderWorkerSet or DisaggregatedSet"
            Console(stderr=True).print(f"[red]no {kinds} {namespace}/{name}[/red]")
            return 1
        if watch and isinstance(view, Tree) and console.is_terminal:
            with Live(view, console=console, refresh_per_second=4) as live:
                while True:
                    await asyncio.sleep(interval)
                    if (tree := await tree_of(client, namespace, name)) is not None:
                        live.update(tree)
        # Off a terminal (or as JSON) a live frame is meaningless: print each new state once.
        last = ""
        while True:
            if view is not None and (text := as_text(console, view)) != last:
                console.file.write(text if output is Output.JSON or not last else "\n" + text)
                console.file.flush()
                last = text
            if not watch:
                return 0
            await asyncio.sleep(interval)
            view = await view_of(client, namespace, name, output, failures=failures)
    finally:
        await client.close()


def status(
    name: Annotated[str, typer.Argument(help="LeaderWorkerSet or DisaggregatedSet name.")],
    namespace: Annotated[str, typer.Option("--namespace", "-n")] = "default",
    kubeconfig: Annotated[str | None, typer.Option(help="Kubeconfig path (default: $KUBECONFIG).")] = None,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch", "-w", help="Keep the tree live until Ctrl-C (off a terminal: print each change)."
        ),
    ] = False,
    output: Annotated[
        Output,
        typer.Option("--output", "-o", help="tree, or json: one document (one line per change with -w)."),
    ] = Output.TREE,
    failures: Annotated[
        bool,
        typer.Option(
            "--failures",
            help="Show the failure ledger: every group recreation, back-off and exhausted budget.",
        ),
    ] = False,
) -> None:
    """Show LeaderWorkerSet → groups → pods with revision, readiness and why a group is not ready;
    for a DisaggregatedSet: roles (ready capacity) → revisions → child LWS → groups → pods."""
    try:
        code = asyncio.run(
            show(
                ClientOptions(kubeconfig=kubeconfig), namespace, name, watch, output=output, failures=failures
            )
        )
    except KeyboardInterrupt:
        code = 0
    raise typer.Exit(code)
