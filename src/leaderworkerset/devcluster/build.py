"""Build the local control plane from Go modules into a versioned cache.

kube-apiserver, kube-controller-manager, kube-scheduler and kubectl come from
the ``k8s.io/kubernetes`` module; etcd from ``go.etcd.io/etcd/server/v3``;
kwok from ``sigs.k8s.io/kwok``. Each is built through a small wrapper module
shipped in ``gomod/`` whose go.mod/go.sum pin every dependency: Kubernetes'
own go.mod resolves its staging modules with local ``replace`` lines that a
dependent module cannot see, so the wrapper replaces each one with its
published v0.X.Y tag. Nothing but the Go module proxy is contacted.

The result directory is keyed by every version (see ``versions.build_key``),
written under a temporary name and renamed when complete, and guarded by a
file lock so that parallel test workers build once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from filelock import FileLock

from leaderworkerset.devcluster import versions
from leaderworkerset.devcluster.progress import StepError, run_step

COMPLETE_MARKER = ".complete"


class BuildError(RuntimeError):
    """The toolchain is missing or a build step failed."""


def go_version(kube: str | None = None) -> str:
    """The Go that builds Kubernetes `kube` (a full version): the toolchain its wrapper module names
    when the local Go is too old for it (see go_toolchain), else the local Go; without `kube`, the
    local Go."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "the Go toolchain (`go`) is not on PATH; it is needed once to build the local control plane "
            "(kube-apiserver, etcd, kwok) from Go modules"
        )
    out = subprocess.run([go, "env", "GOVERSION"], check=True, capture_output=True, text=True)
    local = out.stdout.strip()
    return (go_toolchain(kube, local) if kube is not None else None) or local


def go_toolchain(kube: str, local_go: str | None = None) -> str | None:
    """The toolchain (GOTOOLCHAIN) that every Go build for Kubernetes `kube` exports, or None for the
    local Go. It comes from the version's wrapper module (gomod/k8s/<minor>/go.mod), whose `go` line is
    Kubernetes' own: 1.38 needs Go 1.27, which the go command fetches from the module proxy once."""
    gomod = (
        resources.files("leaderworkerset.devcluster") / "gomod" / "k8s" / versions.minor_of(kube) / "go.mod"
    )
    try:
        return versions.go_toolchain_for(gomod.read_text(), local_go or go_version())
    except ValueError as err:
        raise BuildError(f"Kubernetes {kube}: {err}") from err


def bin_dir_for(go: str | None = None, kube_version: str | None = None) -> Path:
    """The output directory for `kube_version` (see versions.resolve_kubernetes_version)."""
    kube = versions.resolve_kubernetes_version(kube_version)
    return versions.cache_root() / "bin" / versions.build_key(go or go_version(kube), kube)


def is_complete(path: Path) -> bool:
    return (path / COMPLETE_MARKER).is_file() and all((path / b).is_file() for b in versions.ALL_BINARIES)


def ensure_binaries(kube_version: str | None = None) -> Path:
    """Return the directory holding every binary of `kube_version` (default: LWS_KUBERNETES_VERSION,
    else versions.KUBERNETES_VERSION), building what is missing."""
    kube = versions.resolve_kubernetes_version(kube_version)
    out = bin_dir_for(kube_version=kube)
    if is_complete(out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(versions.cache_root() / "build.lock")):
        if is_complete(out):  # another process finished while we waited
            return out
        _build_into(out, kube)
    return out


def go_env(kube: str | None = None) -> dict[str, str]:
    """The environment of every `go` command that builds for Kubernetes `kube` (etcd and kwok in its
    directory too, so that the directory's key names the one Go that built all of it)."""
    env = dict(os.environ)
    toolchain = go_toolchain(kube) if kube is not None else None
    if toolchain is not None:
        # Set here, not left to the go.mod's toolchain line: GOTOOLCHAIN=local (a common go env
        # setting) forbids switching, and the environment variable overrides it.
        env["GOTOOLCHAIN"] = toolchain
    env["CGO_ENABLED"] = "0"
    # The committed go.sum files pin everything; never let a build rewrite them.
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -mod=readonly -buildvcs=false").strip()
    return env


def _kube_ldflags(kube: str) -> str:
    # Stamp the version like Kubernetes' own release build does; otherwise the
    # binaries report v0.0.0-master and version-sniffing clients misbehave.
    minor = kube.split(".")[1]
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={kube}",
            f"-X {pkg}.gitMajor=1",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitCommit=0000000000000000000000000000000000000000",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate=1970-01-01T00:00:00Z",
        ]
    return " ".join(flags)


def _copy_wrappers(work: Path) -> Path:
    """Copy the wrapper modules out of the (possibly read-only) installed package."""
    src = resources.files("leaderworkerset.devcluster") / "gomod"
    dest = work / "gomod"
    with resources.as_file(src) as path:
        shutil.copytree(path, dest)
    return dest


@contextlib.contextmanager
def staged_output(out: Path) -> Iterator[Path]:
    """A temporary sibling of ``out`` to build into; ``publish`` renames it over ``out``.

    Removed when the build fails, so a half-built directory is never mistaken for a complete one.
    """
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent))
    try:
        yield tmp
    except StepError as err:
        raise BuildError(str(err)) from err
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def publish(tmp: Path, out: Path, marker: str) -> None:
    (tmp / COMPLETE_MARKER).write_text(marker)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)


def _build_into(out: Path, kube: str) -> None:
    started = time.monotonic()
    env = go_env(kube)
    log = out.parent / (out.name + ".build.log")
    log.write_text("")
    with staged_output(out) as tmp_out:
        with tempfile.TemporaryDirectory(prefix="lws-gobuild-") as work_str:
            mods = _copy_wrappers(Path(work_str))
            kube_pkgs = [f"k8s.io/kubernetes/cmd/{b}" for b in versions.KUBE_BINARIES]
            run_step(
                f"Building Kubernetes {kube} ({', '.join(versions.KUBE_BINARIES)})",
                [
                    "go",
                    "build",
                    "-trimpath",
                    "-tags=notest,grpcnotrace",
                    f"-ldflags={_kube_ldflags(kube)}",
                    "-o",
                    str(tmp_out) + "/",
                    *kube_pkgs,
                ],
                # One wrapper per minor (hack/gen-k8s-wrapper.sh writes them).
                cwd=mods / "k8s" / versions.minor_of(kube),
                env=env,
                log=log,
                started=started,
            )
            run_step(
                f"Building etcd {versions.ETCD_VERSION}",
                [
                    "go",
                    "build",
                    "-trimpath",
                    "-ldflags=-s -w",
                    "-o",
                    str(tmp_out / "etcd"),
                    "go.etcd.io/etcd/server/v3",
                ],
                cwd=mods / "etcd",
                env=env,
                log=log,
                started=started,
            )
            run_step(
                f"Building kwok {versions.KWOK_VERSION}",
                [
                    "go",
                    "build",
                    "-trimpath",
                    "-ldflags=-s -w",
                    "-o",
                    str(tmp_out / "kwok"),
                    "sigs.k8s.io/kwok/cmd/kwok",
                ],
                cwd=mods / "kwok",
                env=env,
                log=log,
                started=started,
            )
            _copy_kwok_stages(mods / "kwok", tmp_out, env)
        _self_check(tmp_out, kube)
        publish(tmp_out, out, versions.build_key(go_version(kube), kube) + "\n")


def _copy_kwok_stages(kwok_mod: Path, dest: Path, env: dict[str, str]) -> None:
    """kwok's stage definitions ship inside its module zip; keep them next to the binary."""
    info = subprocess.run(
        ["go", "list", "-m", "-json", "sigs.k8s.io/kwok"],
        cwd=kwok_mod,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    module_dir = Path(json.loads(info.stdout)["Dir"])
    shutil.copytree(module_dir / "kustomize" / "stage", dest / "stages")
    for path in (dest / "stages").rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def _self_check(bindir: Path, kube: str) -> None:
    expectations = {
        "kube-apiserver": f"Kubernetes {kube}",
        "kube-controller-manager": f"Kubernetes {kube}",
        "kube-scheduler": f"Kubernetes {kube}",
        "etcd": f"etcd Version: {versions.ETCD_VERSION.removeprefix('v')}",
    }
    for binary, expected in expectations.items():
        out = subprocess.run([str(bindir / binary), "--version"], capture_output=True, text=True, check=False)
        if expected not in out.stdout + out.stderr:
            raise BuildError(f"{binary} --version printed {out.stdout.strip()!r}; expected {expected!r}")
    kubectl = subprocess.run(
        [str(bindir / "kubectl"), "version", "--client"], capture_output=True, text=True, check=False
    )
    if kube not in kubectl.stdout:
        raise BuildError(f"kubectl version --client printed {kubectl.stdout.strip()!r}")
