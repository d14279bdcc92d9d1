"""`lws manager` keeps the other sub-commands, typer, rich, pydantic and the system's CA bundle out of the
long-running process (issue 25)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, sys
sys.argv = ["lws", sys.argv[1], "--help"]
from leaderworkerset.cli import main
try:
    main.main()
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code, "modules": sorted(m for m, v in sys.modules.items() if v is not None)}))
"""
# The manager parsing real flags, up to where it would start the process.
MANAGER_STARTED = """
import json, os, ssl, sys
sys.argv = ["lws", "manager", "--kubeconfig", "/nonexistent", "--no-leader-elect", "--webhook-port",
            "9443", "--insecure-metrics", "--log-json"]
from leaderworkerset.cli import main, manager
async def started(settings):
    pass
manager.run = started
main.main()
"""
# ... reporting the modules it loaded.
RUN_PROBE = (
    MANAGER_STARTED
    + """
from leaderworkerset.cli.deferredmodules import loaded
print(json.dumps(sorted(m for m, v in sys.modules.items() if v is not None and loaded(v))))
"""
)
# ... reporting what aiohttp's default client context trusts and what the environment says after.
CA_PROBE = (
    MANAGER_STARTED
    + """
import aiohttp.connector
print(json.dumps({
    "aiohttp_default_cas": aiohttp.connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
    "later_default_cas": ssl.create_default_context().cert_store_stats()["x509_ca"],
    "environment": {name: os.environ.get(name) for name in ("SSL_CERT_FILE", "SSL_CERT_DIR")},
}))
"""
)
LEFT_OUT = (
    "rich",
    "pygments",
    "leaderworkerset.devcluster",
    "leaderworkerset.cli.status",
    "leaderworkerset.install",
)


def _imported(command: str) -> tuple[int, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, command], capture_output=True, text=True, check=True, timeout=60
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["code"], result["modules"]


def _left_out_present(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in LEFT_OUT or m.startswith(LEFT_OUT)]


def test_the_manager_command_imports_neither_rich_nor_the_other_sub_commands() -> None:
    code, modules = _imported("manager")
    assert code == 0
    assert "leaderworkerset.cli.manager" in modules
    assert _left_out_present(modules) == []


def test_the_manager_runs_without_typer_or_lightkubes_generated_models() -> None:
    """typer (with click, about 1.4 MiB) and its pydantic parsing (about 6 MiB) are left out when the
    flags are plainly valid; lightkube's generated models (about 2 MiB) load only if something reads them."""
    out = subprocess.run(
        [sys.executable, "-c", RUN_PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    modules: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    assert "leaderworkerset.cli.manager_process" in modules
    assert [m for m in modules if m.split(".")[0] in ("typer", "click", "pydantic", "pydantic_core")] == []
    assert "lightkube.config.client_adapter" in modules  # the authentication still comes from lightkube
    assert [m for m in modules if m.startswith(("lightkube.models.", "lightkube.resources."))] == []
    assert _left_out_present(modules) == []


def test_the_manager_never_loads_cryptography() -> None:
    """Its native library costs about 11 MiB of RSS for good: certificates come from a child
    process (runtime/childjob.py)."""
    out = subprocess.run(
        [sys.executable, "-c", RUN_PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    modules: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    assert "leaderworkerset.webhooks.certs" in modules
    assert [m for m in modules if m.split(".")[0] == "cryptography"] == []


def test_other_commands_still_get_every_sub_command_and_rich_help() -> None:
    code, modules = _imported("status")
    assert code == 0
    assert {"leaderworkerset.cli.status", "rich"} <= set(modules)


def _system_cas() -> int:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ssl; print(ssl.create_default_context().cert_store_stats()['x509_ca'])",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(out.stdout)


def test_the_manager_imports_aiohttp_without_the_system_ca_bundle_and_restores_the_environment(
    tmp_path: Path,
) -> None:
    """aiohttp's default client contexts would hold the bundle for good (about 2.1 MiB); the transport
    never uses them. Contexts made later, as lightkube's for a cluster without a CA, still get it."""
    system = _system_cas()
    if system == 0:
        pytest.skip("this machine has no system CA bundle, so there is nothing to leave out")
    for environment in ({}, {"SSL_CERT_DIR": str(tmp_path)}):
        env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
        out = subprocess.run(
            [sys.executable, "-c", CA_PROBE],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env={**env, **environment},
        )
        seen = json.loads(out.stdout.strip().splitlines()[-1])
        assert seen == {
            "aiohttp_default_cas": 0,
            "later_default_cas": system,
            "environment": {"SSL_CERT_FILE": None, "SSL_CERT_DIR": environment.get("SSL_CERT_DIR")},
        }
