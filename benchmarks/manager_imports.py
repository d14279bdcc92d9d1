"""What `lws manager` costs before it starts: RSS, modules and CPU of its import graph and flag parsing.

    uv run python -m benchmarks.manager_imports [--repeats 3] [--packages] [--optimize N]

Each repeat is a fresh interpreter that runs `lws manager` with the flags the e2e tests and the
side-by-side harness use, up to the point where it would start the process (the process's `run`
is replaced), at the image's PYTHONOPTIMIZE, as the tests and the harness run it (`--optimize 0`: plain
Python, as the figures before 2026-12-05 20:00 UTC were measured). It reports the RSS (VmRSS, split into
anonymous memory and pages mapped from files: the interpreter, shared libraries, extension modules), the
number of loaded modules and the CPU time since the interpreter started its script. `--packages` also lists, for one run, the RSS each top-level
package's own module code added while importing (its submodules' code included, other packages'
excluded; shared libraries loaded by an extension module count for that module).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from tests.support import image

PROBE = r"""
import json, resource, sys, time
TRACE = sys.argv[1] == "packages"
own = {}
if TRACE:
    import importlib.abc
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 1048576
    stack = []
    class Timed(importlib.abc.Loader):
        def __init__(self, inner): self.inner = inner
        def create_module(self, spec): return self.inner.create_module(spec)
        def exec_module(self, module):
            start = rss(); stack.append(0.0)
            try: self.inner.exec_module(module)
            finally:
                child = stack.pop(); total = rss() - start
                own[module.__name__] = total - child
                if stack: stack[-1] += total
    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"): continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                        spec.loader = Timed(spec.loader)
                    return spec
            return None
    sys.meta_path.insert(0, Finder())
sys.argv = ["lws", "manager", "--kubeconfig", "/nonexistent", "--no-leader-elect", "--webhook-port", "9443",
            "--cert-dir", "/nonexistent", "--insecure-metrics", "--log-json"]
from leaderworkerset.cli import main, manager
async def started(settings):
    pass
manager.run = started
try:
    main.main()
except SystemExit:  # typer's parser exits when the command returns
    pass
usage = resource.getrusage(resource.RUSAGE_SELF)
with open("/proc/self/status") as f:
    status = {k: int(v.split()[0]) for k, _, v in (line.partition(":") for line in f)
              if k in ("VmRSS", "RssAnon", "RssFile")}
rss_kib = status["VmRSS"]
packages = {}
for name, mib in own.items():
    packages[name.split(".")[0]] = packages.get(name.split(".")[0], 0.0) + mib
print(json.dumps({"rss_mib": rss_kib / 1024, "anon_mib": status["RssAnon"] / 1024,
                  "file_mib": status["RssFile"] / 1024,
                  "modules": sum(1 for v in sys.modules.values() if v is not None),
                  "cpu_s": usage.ru_utime + usage.ru_stime, "packages": packages,
                  "optimize": sys.flags.optimize}))
"""


def run_once(mode: str, optimize: int) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, *image.python_flags(optimize), "-c", PROBE, mode], capture_output=True, text=True, check=True, timeout=120
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--packages", action="store_true", help="also the RSS by top-level package (one run)")
    parser.add_argument(
        "--optimize", type=int, default=image.optimize_level(), help="PYTHONOPTIMIZE (default: the image's)"
    )
    args = parser.parse_args()
    runs = [run_once("plain", args.optimize) for _ in range(args.repeats)]
    rss = [float(str(r["rss_mib"])) for r in runs]
    modules = [float(str(r["modules"])) for r in runs]
    cpu = [float(str(r["cpu_s"])) for r in runs]
    anon = [float(str(r["anon_mib"])) for r in runs]
    mapped = [float(str(r["file_mib"])) for r in runs]
    print(
        f"{args.repeats} fresh processes at PYTHONOPTIMIZE={args.optimize}: RSS {spread(rss, '.1f')} MiB "
        f"(anonymous {spread(anon, '.1f')}, "
        f"mapped from files {spread(mapped, '.1f')}), modules {spread(modules, '.0f')}, "
        f"CPU {spread(cpu, '.2f')} s"
    )
    if args.packages:
        traced = run_once("packages", args.optimize)["packages"]
        assert isinstance(traced, dict)
        ranked = sorted(traced.items(), key=lambda item: -float(item[1]))[:20]
        print("RSS by package (MiB):", ", ".join(f"{name} {mib:.1f}" for name, mib in ranked))


if __name__ == "__main__":
    main()
