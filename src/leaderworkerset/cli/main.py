"""The ``lws`` command (also installed as ``kubectl-lws``).

Every command runs on the typer application of `cli/app.py`, except `lws manager` (the image's entry
point) with a plainly valid command line: the long-running process parses its flags itself and
never loads typer, rich, the other sub-commands, lightkube's generated models, the system's CA bundle
or frozenlist's C++ extension.
"""

from __future__ import annotations

import os
import sys


def _keep_rich_out() -> None:
    """`lws manager` runs without rich: typer would format its help and errors with it, and
    structlog imports it for its console renderer and tracebacks whenever it is installed; the
    long-running process never uses it (66 modules, about 3 MiB). Decided before typer is
    imported, which reads TYPER_USE_RICH once; `import rich` then fails, so structlog renders
    exceptions as plain text and the help is click's plain help."""
    os.environ.setdefault("TYPER_USE_RICH", "0")
    sys.modules.setdefault("rich", None)  # type: ignore[arg-type]  # None: "import rich" fails


def _manager_through_typer() -> None:
    """Help, errors and unusual values of `lws manager`: typer parses, with only that command."""
    from leaderworkerset.cli.app import app, register_manager

    register_manager()
    app()


def _lean_imports() -> None:
    """lightkube's generated models load only if something reads them, aiohttp's default client
    contexts hold no CA bundle and frozenlist is pure Python (cli/deferredmodules.py); before anything
    imports lightkube or aiohttp."""
    from leaderworkerset.cli.deferredmodules import defer_generated_models, import_aiohttp_lean

    defer_generated_models()
    import_aiohttp_lean()


# At import, as `python -m leaderworkerset.cli` and the console script both import this module first.
if sys.argv[1:2] == ["manager"]:
    _keep_rich_out()
    _lean_imports()


def _run_manager() -> None:
    from leaderworkerset.cli import manager, quickoptions

    quickoptions.run(manager.manager, sys.argv[2:], with_typer=_manager_through_typer)


def main() -> None:
    if sys.argv[1:2] == ["manager"]:
        _run_manager()
        return
    from leaderworkerset.cli.app import app, register

    register()
    app()
