"""The ``lws`` typer application: every sub-command registers itself on the root app here.

`cli/main.py` imports this module for every command but a plainly valid `lws manager`, which never
loads typer (cli/quickoptions.py).
"""

from __future__ import annotations

import typer

from leaderworkerset import __version__

app = typer.Typer(
    name="lws",
    help="LeaderWorkerSet for Kubernetes: local demo cluster, controller manager, CRDs and group views.",
    no_args_is_help=True,
    add_completion=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"lws {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """LeaderWorkerSet for Kubernetes."""


def register_manager() -> None:
    from leaderworkerset.cli import manager, quickoptions

    app.command("manager")(quickoptions.typer_command(manager.manager))


def register() -> None:
    # Sub-command modules are imported lazily here so that a broken optional
    # module names itself instead of breaking `lws --help`.
    from leaderworkerset.cli import cluster, crds, install, plan, rollout, status, up

    app.command("up")(up.up)
    app.add_typer(cluster.app, name="cluster")
    app.command("crds")(crds.crds_command)
    app.command("install")(install.install_command)
    app.command("uninstall")(install.uninstall_command)
    app.command("status")(status.status)
    app.command("plan")(plan.plan)
    app.add_typer(rollout.app, name="rollout")
    register_manager()
