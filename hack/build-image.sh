#!/usr/bin/env bash
# Build the manager image without Docker, from what this machine can reach (the Debian mirror and the
# Python package index; Docker Hub and ghcr.io are not reachable here):
#   1. a Debian bookworm minbase root filesystem with CPython 3.11 (mmdebstrap),
#   2. the locked dependencies (uv export of uv.lock, with hashes) and our wheel in /opt/lws, bytecode
#      compiled, installed inside the rootfs with uv,
#   3. packed as an OCI image layout with umoci: user 65532:65532, entrypoint `lws manager`, OCI labels.
# The Dockerfile builds the same layout on python:3.11-slim where a registry is reachable.
#
#   hack/build-image.sh [OUT_DIR]      # default build/image; the image is OUT_DIR/oci:lws
# Needs root (chroot, mounts) and: mmdebstrap umoci (apt-get install mmdebstrap umoci).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(realpath -m "${1:-$repo/build/image}")"
work="$out/work"
rootfs="$work/rootfs"
version="$(cd "$repo" && uv run --quiet python -c 'import leaderworkerset; print(leaderworkerset.__version__)')"
revision="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"

rm -rf "$out" && mkdir -p "$work/dist"
started=$(date +%s)

echo "==> requirements from uv.lock and the project wheel"
(cd "$repo" && uv export --quiet --frozen --no-dev --no-emit-project -o "$work/dist/requirements.txt" \
  && uv build --quiet --wheel -o "$work/dist")

echo "==> Debian bookworm minbase + python3.11"
mmdebstrap --quiet --variant=minbase --include=python3.11,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' bookworm "$rootfs"

echo "==> /opt/lws inside the rootfs"
cp "$(command -v uv)" "$rootfs/usr/local/bin/uv"
cp -r "$work/dist" "$rootfs/tmp/dist"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
# The host's trust store for the build only (it may hold an egress proxy's CA); not kept in the image.
cp "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$rootfs/tmp/build-ca.crt"
mount --bind /dev "$rootfs/dev"
mount -t proc proc "$rootfs/proc"
cleanup() { umount "$rootfs/proc" 2>/dev/null || true; umount "$rootfs/dev" 2>/dev/null || true; }
trap cleanup EXIT
chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp UV_CACHE_DIR=/tmp/uv-cache \
  SSL_CERT_FILE=/tmp/build-ca.crt UV_NATIVE_TLS=1 \
  sh -ec 'uv venv --quiet --python /usr/bin/python3.11 /opt/lws
          uv pip install --quiet --python /opt/lws/bin/python --compile-bytecode --require-hashes -r /tmp/dist/requirements.txt
          uv pip install --quiet --python /opt/lws/bin/python --compile-bytecode --no-deps /tmp/dist/*.whl
          /opt/lws/bin/lws --version'
cleanup
trap - EXIT
rm -rf "$rootfs/usr/local/bin/uv" "$rootfs/tmp/"* "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*
: > "$rootfs/etc/resolv.conf"

echo "==> OCI image layout (umoci)"
umoci init --layout "$out/oci"
umoci new --image "$out/oci:lws"
umoci unpack --image "$out/oci:lws" "$work/bundle" >/dev/null
cp -a "$rootfs/." "$work/bundle/rootfs/"
umoci repack --image "$out/oci:lws" "$work/bundle"
umoci config --image "$out/oci:lws" \
  --config.user 65532:65532 --config.workingdir / \
  --config.entrypoint lws --config.entrypoint manager \
  --config.env PATH=/opt/lws/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.env PYTHONDONTWRITEBYTECODE=1 --config.env PYTHONUNBUFFERED=1 \
  --config.exposedports 9443/tcp --config.exposedports 8443/tcp --config.exposedports 8081/tcp \
  --config.label org.opencontainers.image.title=lws-python \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.revision=$revision" \
  --config.label org.opencontainers.image.licenses=Apache-2.0 \
  --config.label org.opencontainers.image.base.name=debian:bookworm
umoci gc --layout "$out/oci"
rm -rf "$work"

echo "==> done in $(( $(date +%s) - started ))s: $out/oci:lws ($(du -sh "$out/oci" | cut -f1) compressed)"
