#!/usr/bin/env bash
# Build the manager image without Docker, from what this machine can reach (the Debian mirror and the
# Python package index; Docker Hub and ghcr.io are not reachable here):
#   1. a Debian bookworm minbase root filesystem with CPython 3.11 (mmdebstrap), for --arch,
#   2. the locked dependencies (uv export of uv.lock, with hashes) and our wheel in /opt/lws, bytecode
#      compiled, installed inside the rootfs with uv,
#   3. packed as an OCI image layout with umoci, configured from hack/image-contract.toml (user,
#      entrypoint, env, ports, labels) plus the architecture.
# The Dockerfile builds the same contract on python:3.11-slim where a registry is reachable.
#
#   hack/build-image.sh [--arch ARCH] [--check] [OUT_DIR]
#     ARCH     amd64 | arm64 | s390x | ppc64le (default: this machine's; env LWS_IMAGE_ARCH). A foreign
#              architecture runs the rootfs steps under qemu-user-static through binfmt_misc.
#     --check  then check the image against the contract (tests/integration/image).
#     OUT_DIR  default build/image (this machine's architecture) or build/image-ARCH; the image is
#              OUT_DIR/oci:lws.
# Needs root (chroot, mounts); installs its Debian prerequisites (mmdebstrap umoci, and for a foreign
# architecture qemu-user-static binfmt-support) when they are missing.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/debian-image.sh
. "$repo/hack/lib/debian-image.sh"
# shellcheck source=lib/mounts.sh
source "$repo/hack/lib/mounts.sh"
contract="$repo/hack/image-contract.toml"
host_arch="$(dpkg --print-architecture)"
arch="${LWS_IMAGE_ARCH:-}"
check=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch="$2"; shift 2 ;;
    --arch=*) arch="${1#--arch=}"; shift ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
# The OCI/Go name of the architecture, Debian's name for it, uv's target triple, qemu's name for it.
case "${arch:-$host_arch}" in
  amd64|x86_64) arch=amd64 deb_arch=amd64 triple=x86_64-unknown-linux-gnu qemu=qemu-x86_64 ;;
  arm64|aarch64) arch=arm64 deb_arch=arm64 triple=aarch64-unknown-linux-gnu qemu=qemu-aarch64 ;;
  s390x) arch=s390x deb_arch=s390x triple=s390x-unknown-linux-gnu qemu=qemu-s390x ;;
  ppc64le|ppc64el) arch=ppc64le deb_arch=ppc64el triple=powerpc64le-unknown-linux-gnu qemu=qemu-ppc64le ;;
  *) echo "unsupported architecture ${arch:-$host_arch}" >&2; exit 2 ;;
esac
foreign=0; [ "$deb_arch" = "$host_arch" ] || foreign=1
if [ -z "$out" ]; then
  if [ $foreign = 1 ]; then out="$repo/build/image-$arch"; else out="$repo/build/image"; fi
fi
out="$(realpath -m "$out")"
work="$out/work"
rootfs="$work/rootfs"

image_prerequisites "$foreign" "$qemu"

version="$(cd "$repo" && uv run --quiet python -c 'import leaderworkerset; print(leaderworkerset.__version__)')"
revision="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
uv_version="$(uv --version | cut -d' ' -f2)"

detach_mounts_under "$out"
rm -rf "$out" && mkdir -p "$work/dist"
started=$(date +%s)

echo "==> requirements from uv.lock and the project wheel"
(cd "$repo" && uv export --quiet --frozen --no-dev --no-emit-project -o "$work/dist/requirements.txt" \
  && uv build --quiet --wheel -o "$work/dist")

echo "==> Debian bookworm minbase ($deb_arch) + python3.11"
debian_rootfs bookworm "$deb_arch" "$rootfs" python3.11,ca-certificates

echo "==> /opt/lws inside the rootfs"
if [ $foreign = 1 ]; then
  # The same uv release, built for the target (from its wheel on PyPI): the host's binary needs the
  # host's dynamic loader, which a foreign rootfs does not have.
  uv pip install --quiet --target "$work/uv-$arch" --python-platform "$triple" --python-version 3.11 \
    --only-binary :all: --no-deps "uv==$uv_version"
  uv_binary="$work/uv-$arch/bin/uv"
else
  uv_binary="$(command -v uv)"
fi
cp -r "$work/dist" "$rootfs/tmp/dist"
# uv compiles the plain bytecode; the image runs with the contract's PYTHONOPTIMIZE, so the virtualenv
# and Debian's standard library (which Debian compiles at the plain level only) get that level's too.
optimize="$(cd "$repo" && uv run --quiet python -c 'import sys, tomllib
print(tomllib.load(open(sys.argv[1], "rb"))["env"].get("PYTHONOPTIMIZE", "0"))' "$contract")"
rootfs_run "$rootfs" "$uv_binary" OPTIMIZE="${optimize:-0}" -- \
  'uv venv --quiet --python /usr/bin/python3.11 /opt/lws
   uv pip install --quiet --python /opt/lws/bin/python --compile-bytecode --require-hashes -r /tmp/dist/requirements.txt
   uv pip install --quiet --python /opt/lws/bin/python --compile-bytecode --no-deps /tmp/dist/*.whl
   if [ "$OPTIMIZE" != 0 ]; then
     /usr/bin/python3.11 -m compileall -q -o "$OPTIMIZE" /usr/lib/python3.11 /opt/lws/lib
   fi
   echo "lws --version ($(uname -m)): $(PYTHONOPTIMIZE=$OPTIMIZE /opt/lws/bin/lws --version)"'
# uv's lock file of the virtualenv is world-writable and of no use at run time.
rm -f "$rootfs/opt/lws/.lock"
rootfs_clean "$rootfs"

echo "==> OCI image layout (umoci), configured from hack/image-contract.toml"
# umoci's arguments from the contract, NUL-separated.
mapfile -d '' config_args < <(cd "$repo" && uv run --quiet python - "$contract" "$arch" "$version" "$revision" <<'PY'
import sys
import tomllib

contract = tomllib.load(open(sys.argv[1], "rb"))
arch, version, revision = sys.argv[2:5]
per_build = {
    "org.opencontainers.image.version": version,
    "org.opencontainers.image.revision": revision,
    "org.opencontainers.image.base.name": "debian:bookworm",
}
unknown = set(contract["build_labels"]) - set(per_build)
if unknown:
    sys.exit(f"hack/build-image.sh does not know how to set the build labels {sorted(unknown)}")
args = ["--architecture", arch, "--os", "linux"]
args += ["--config.user", contract["user"], "--config.workingdir", contract["workdir"]]
args += [a for word in contract["entrypoint"] for a in ("--config.entrypoint", word)]
args += [a for port in contract["exposed_ports"] for a in ("--config.exposedports", port)]
args += [a for k, v in contract["env"].items() for a in ("--config.env", f"{k}={v}")]
labels = {**contract["labels"], **per_build}
args += [a for k, v in labels.items() for a in ("--config.label", f"{k}={v}")]
sys.stdout.write("\0".join(args) + "\0")
PY
)
oci_pack "$rootfs" "$out/oci" lws "$work" "${config_args[@]}"
rm -rf "$work"

echo "==> done in $(( $(date +%s) - started ))s: $out/oci:lws ($arch, $(du -sh "$out/oci" | cut -f1) compressed)"
if [ $check = 1 ]; then
  echo "==> checking it against hack/image-contract.toml"
  cd "$repo" && LWS_IMAGE_DIRS="$out" LWS_REQUIRE_IMAGES=1 uv run pytest -q -p no:cacheprovider tests/integration/image
fi
