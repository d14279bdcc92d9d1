#!/usr/bin/env bash
# Build a workload runtime's image without Docker, the way hack/build-image.sh builds the manager's:
#   1. a Debian trixie minbase root filesystem with its CPython 3.13 (mmdebstrap; jaxlib 0.12 has no
#      wheels for bookworm's 3.11),
#   2. the runtime's locked packages (hack/workloads/RUNTIME/requirements.txt, every wheel checked
#      against its hash) in the virtualenv /opt/venv, bytecode compiled, installed by uv in a chroot,
#   3. packed as an OCI image layout with umoci: user 65532 (`nonroot`, home /home/nonroot), the
#      virtualenv first on PATH, no entrypoint (the pod's command runs `python3`, `ray`, ...).
# The image is generic: the example programs come with their manifests (docs/examples/).
#
#   hack/build-workload-image.sh RUNTIME [OUT_DIR]
#     RUNTIME  a directory of hack/workloads (ray, jax)
#     OUT_DIR  default build/workload-RUNTIME; the image is OUT_DIR/oci:RUNTIME
# This machine's architecture only. Needs root (chroot, mounts); installs mmdebstrap and umoci when
# missing. The real-node cluster builds and caches these images itself (`lws cluster up --images`).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/debian-image.sh
. "$repo/hack/lib/debian-image.sh"
# shellcheck source=lib/mounts.sh
source "$repo/hack/lib/mounts.sh"
runtime="${1:?usage: hack/build-workload-image.sh RUNTIME [OUT_DIR]}"
requirements="$repo/hack/workloads/$runtime/requirements.txt"
[ -f "$requirements" ] || { echo "no $requirements: RUNTIME is one of $(ls "$repo/hack/workloads")" >&2; exit 2; }
out="$(realpath -m "${2:-$repo/build/workload-$runtime}")"
work="$out/work"
rootfs="$work/rootfs"
arch="$(dpkg --print-architecture)"
suite=trixie
python=python3.13
user=65532
home=/home/nonroot

image_prerequisites 0 ""
detach_mounts_under "$out"  # what a killed build left mounted in its root filesystem
rm -rf "$out" && mkdir -p "$work"
started=$(date +%s)

echo "==> Debian $suite minbase ($arch) + $python"
debian_rootfs "$suite" "$arch" "$rootfs" "$python"

echo "==> /opt/venv: hack/workloads/$runtime/requirements.txt"
cp "$requirements" "$rootfs/tmp/requirements.txt"
rootfs_run "$rootfs" "$(command -v uv)" PYTHON="/usr/bin/$python" -- \
  'uv venv --quiet --python "$PYTHON" /opt/venv
   uv pip install --quiet --python /opt/venv/bin/python --compile-bytecode --require-hashes \
     -r /tmp/requirements.txt
   /opt/venv/bin/python -c "import sys; print(sys.version)"'
rm -f "$rootfs/opt/venv/.lock"
# The user, named so that programs asking for their user's name or home (getpass, Ray) find one.
echo "nonroot:x:$user:$user:nonroot:$home:/usr/sbin/nologin" >> "$rootfs/etc/passwd"
echo "nonroot:x:$user:" >> "$rootfs/etc/group"
install -d -m 0755 -o "$user" -g "$user" "$rootfs$home"
rootfs_clean "$rootfs"

echo "==> OCI image layout (umoci)"
installed="$(grep -E '^[a-z0-9_.-]+==' "$requirements" | tr -d ' \\' | sort | paste -sd ' ')"
oci_pack "$rootfs" "$out/oci" "$runtime" "$work" \
  --architecture "$arch" --os linux \
  --config.user "$user:$user" --config.workingdir "$home" --config.cmd "$python" \
  --config.env "PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --config.env "HOME=$home" --config.env LANG=C.UTF-8 --config.env PYTHONUNBUFFERED=1 \
  --config.env PYTHONDONTWRITEBYTECODE=1 \
  --config.label "org.opencontainers.image.title=lws-workload-$runtime" \
  --config.label "org.opencontainers.image.description=$installed on Debian $suite's $python (leaderworkerset's docs/examples)" \
  --config.label "org.opencontainers.image.base.name=debian:$suite"
rm -rf "$work"

echo "==> done in $(( $(date +%s) - started ))s: $out/oci:$runtime ($arch, $(du -sh "$out/oci" | cut -f1) compressed)"
