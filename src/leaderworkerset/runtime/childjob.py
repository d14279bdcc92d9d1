"""Work the long-running manager hands to a short-lived child process.

Making and checking certificates needs `cryptography`, whose native library adds about 11 MiB to
the resident memory of any process that imports it, for as long as that process lives. The manager
needs it once at start and then every few months, so it asks a child: `python -m
leaderworkerset.runtime.childjob <module>` imports `<module>`, calls its `job(payload) -> answer`
with the payload read as JSON from stdin, and writes the answer as JSON to stdout. Each job module
keeps `cryptography` out of its callers' imports.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

Answer = dict[str, Any]
# Generous: the child imports Python and cryptography and may generate RSA keys on a busy node.
TIMEOUT_SECONDS = 120.0
_PACKAGE = "leaderworkerset."


class ChildJobError(RuntimeError):
    """The child failed; the message carries its exit code and the end of its stderr."""


def _command(module: str) -> list[str]:
    if not module.startswith(_PACKAGE):
        raise ValueError(f"child jobs run modules of this package only, not {module!r}")
    return [sys.executable, "-m", __name__, module]


def _answer(module: str, code: int | None, out: bytes, err: bytes) -> Answer:
    if code != 0:
        tail = err.decode(errors="replace").strip()[-2000:]
        raise ChildJobError(f"{module} exited with {code}: {tail}")
    answer: Answer = json.loads(out)
    return answer


def call(module: str, payload: Mapping[str, Any], timeout: float = TIMEOUT_SECONDS) -> Answer:
    """Run `module`'s job in a child and wait (start-up code that is not on the event loop yet)."""
    done = subprocess.run(
        _command(module),
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return _answer(module, done.returncode, done.stdout, done.stderr)


async def call_async(module: str, payload: Mapping[str, Any], timeout: float = TIMEOUT_SECONDS) -> Answer:
    """Run `module`'s job in a child without blocking the event loop."""
    child = await asyncio.create_subprocess_exec(
        *_command(module),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(child.communicate(json.dumps(payload).encode()), timeout)
    except BaseException:
        if child.returncode is None:
            child.kill()
            await child.wait()
        raise
    return _answer(module, child.returncode, out, err)


def main(argv: Sequence[str]) -> int:
    [module] = argv
    _command(module)  # the same rule as the caller's
    answer = importlib.import_module(module).job(json.load(sys.stdin))
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
