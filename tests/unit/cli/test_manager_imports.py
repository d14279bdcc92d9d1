"""`lws manager` keeps the other sub-commands, typer, rich, pydantic, the system's CA bundle and
frozenlist's C++ extension out of the long-running process."""

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
# What the manager sets while it imports aiohttp, and restores.
ENVIRONMENT = ("SSL_CERT_FILE", "SSL_CERT_DIR", "FROZENLIST_NO_EXTENSIONS")
# ... reporting what aiohttp's default client context trusts, which frozenlist it got, whether the C++
# runtime is mapped, and what the environment says after.
LEAN_AIOHTTP_PROBE = (
    MANAGER_STARTED
    + """
import aiohttp.connector, frozenlist
with open("/proc/self/maps") as maps:
    mapped = maps.read()
print(json.dumps({
    "aiohttp_default_cas": aiohttp.connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
    "later_default_cas": ssl.create_default_context().cert_store_stats()["x509_ca"],
    "frozenlist": frozenlist.FrozenList is frozenlist.PyFrozenList,
    "libstdc++": "libstdc++" in mapped,
    "environment": {name: os.environ.get(name) for name in ENVIRONMENT},
}))
""".replace("ENVIRONMENT", repr(ENVIRONMENT))
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


def test_the_manager_imports_aiohttp_lean_and_restores_the_environment(tmp_path: Path) -> None:
    """aiohttp's default client contexts would hold the CA bundle for good (about 2.1 MiB), and
    frozenlist's C++ list maps the C++ runtime (about 1 MiB); the manager needs neither. Contexts made
    later, as lightkube's for a cluster without a CA, still get the bundle."""
    system = _system_cas()
    if system == 0:
        pytest.skip("this machine has no system CA bundle, so there is nothing to leave out")
    probe = "import frozenlist, json; print(json.dumps(frozenlist.FrozenList is frozenlist.PyFrozenList))"
    compiled = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    if json.loads(compiled.stdout) is True:
        pytest.skip("frozenlist's compiled list is not installed here, so there is nothing to leave out")
    environments = ({}, {"SSL_CERT_DIR": str(tmp_path), "FROZENLIST_NO_EXTENSIONS": ""})
    for environment in environments:
        env = {k: v for k, v in os.environ.items() if k not in ENVIRONMENT}
        out = subprocess.run(
            [sys.executable, "-c", LEAN_AIOHTTP_PROBE],
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
            "frozenlist": True,
            "libstdc++": False,
            "environment": {name: environment.get(name) for name in ENVIRONMENT},
        }
