# Sourced by the Docker-free image builds (hack/build-image.sh, the manager; hack/build-workload-image.sh,
# the workload runtimes): a Debian minbase root filesystem made with mmdebstrap, Python packages
# installed into it by uv inside a chroot, and the result packed as an OCI image layout with umoci.
# Needs root (chroot, mounts).

# image_prerequisites FOREIGN QEMU: mmdebstrap and umoci, and for a foreign architecture qemu-user-static
# registered with binfmt_misc ("F" flag: the interpreter is opened at registration, so it works inside
# the chroot), installed when missing.
image_prerequisites() {
  local foreign="$1" qemu="$2" need=()
  command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
  command -v umoci >/dev/null || need+=(umoci)
  if [ "$foreign" = 1 ]; then
    command -v update-binfmts >/dev/null || need+=(binfmt-support)
    command -v "$qemu-static" >/dev/null || need+=(qemu-user-static)
  fi
  if [ ${#need[@]} -gt 0 ]; then
    echo "==> apt-get install ${need[*]}"
    apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  if [ "$foreign" = 1 ]; then
    [ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    [ -e "/proc/sys/fs/binfmt_misc/$qemu" ] || update-binfmts --enable "$qemu"
    grep -qx enabled "/proc/sys/fs/binfmt_misc/$qemu" || { echo "binfmt_misc: $qemu is not enabled" >&2; return 1; }
  fi
}

# debian_rootfs SUITE DEB_ARCH ROOTFS PACKAGES: a minbase root filesystem without documentation, manual
# pages or translations.
debian_rootfs() {
  mmdebstrap --quiet --arch="$2" --variant=minbase --include="$4" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' "$1" "$3"
}

# rootfs_run ROOTFS UV [VAR=VALUE...] -- SCRIPT: run SCRIPT (sh -ec) inside the root filesystem with uv
# on its PATH, the host's DNS and trust store (it may hold an egress proxy's CA) for the downloads,
# /dev and /proc mounted; none of these stay in the image (rootfs_clean).
rootfs_run() {
  local rootfs="$1" uv="$2" env=()
  shift 2
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  install -m 0755 "$uv" "$rootfs/usr/local/bin/uv"
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  cp "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$rootfs/tmp/build-ca.crt"
  mount --bind /dev "$rootfs/dev"
  mount -t proc proc "$rootfs/proc"
  local status=0
  chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp UV_CACHE_DIR=/tmp/uv-cache \
    SSL_CERT_FILE=/tmp/build-ca.crt UV_NATIVE_TLS=1 "${env[@]}" sh -ec "$1" || status=$?
  umount "$rootfs/proc" || true
  umount "$rootfs/dev" || true
  return $status
}

# rootfs_clean ROOTFS: what the build brought in and a container needs not (uv, its cache, apt's
# lists; device nodes come from the container runtime, DNS from the kubelet).
rootfs_clean() {
  local rootfs="$1"
  rm -rf "$rootfs/usr/local/bin/uv" "$rootfs/tmp/"* "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*
  find "$rootfs/dev" -mindepth 1 -delete
  : > "$rootfs/etc/resolv.conf"
}

# oci_pack ROOTFS LAYOUT TAG WORK [UMOCI_CONFIG_ARGS...]: ROOTFS as the one layer of the image
# LAYOUT:TAG, configured with the arguments of `umoci config`; WORK is scratch space.
oci_pack() {
  local rootfs="$1" layout="$2" tag="$3" work="$4"
  shift 4
  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci unpack --image "$layout:$tag" "$work/bundle" >/dev/null
  cp -a "$rootfs/." "$work/bundle/rootfs/"
  umoci repack --image "$layout:$tag" "$work/bundle"
  umoci config --image "$layout:$tag" "$@"
  umoci gc --layout "$layout"
}
