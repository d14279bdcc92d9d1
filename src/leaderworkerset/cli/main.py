"""The ``lws`` command (also installed as ``kubectl-lws``).

Each sub-command group lives in its own module and registers itself on the
root Typer app here; this module only wires them together.
"""

from __future__ import annotations

import os
import sys


def _keep_rich_out() -> None:
    """`lws manager` (the image's entry point) runs without rich: typer would format its help and
    errors with it, and structlog imports it for its console renderer and tracebacks whenever it
    is installed; the long-running process never uses it (issue 25: 66 modules, about 3 MiB).
    Decided before typer is imported, which reads TYPER_USE_RICH once; `import rich` then fails,
    so structlog renders exceptions as plain text and the help is click's plain help."""
    if sys.argv[1:2] == ["manager"]:
        os.environ.setdefault("TYPER_USE_RICH", "0")
        sys.modules.setdefault("rich", None)  # type: ignore[arg-type]  # None: "import rich" fails


def _defer_generated_models() -> None:
    """`lws manager` loads lightkube's generated models only if something reads them
    (cli/deferredmodules.py); installed before anything imports lightkube."""
    if sys.argv[1:2] == ["manager"]:
        from leaderworkerset.cli.deferredmodules import defer_generated_models

        defer_generated_models()


_keep_rich_out()
_defer_generated_models()

import typer  # noqa: E402

from leaderworkerset import __version__  # noqa: E402

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


def _register_manager_only() -> None:
    """`lws manager` imports no other sub-command: their modules (the dev cluster, install, the
    views) cost the long-running process memory it never uses (issue 25: 85 modules, 3 MiB)."""
    from leaderworkerset.cli import manager

    app.command("manager")(manager.manager)


def _run_manager() -> None:
    """`lws manager`'s flags are parsed from its typer annotations without typer's pydantic-based
    parsing when the command line is plainly valid (cli/quickoptions.py); help and errors go
    through typer as for every other command."""
    from leaderworkerset.cli import manager, quickoptions

    _register_manager_only()
    quickoptions.run(manager.manager, sys.argv[2:], with_typer=app)


def _register() -> None:
    # Sub-command modules are imported lazily here so that a broken optional
    # module names itself instead of breaking `lws --help`.
    from leaderworkerset.cli import cluster, crds, install, manager, plan, rollout, status, up

    app.command("up")(up.up)
    app.add_typer(cluster.app, name="cluster")
    app.command("crds")(crds.crds_command)
    app.command("install")(install.install_command)
    app.command("uninstall")(install.uninstall_command)
    app.command("status")(status.status)
    app.command("plan")(plan.plan)
    app.add_typer(rollout.app, name="rollout")
    app.command("manager")(manager.manager)


def main() -> None:
    if sys.argv[1:2] == ["manager"]:
        _run_manager()
        return
    _register()
    app()
