# shellcheck shell=bash
# Sourced by the image builds.

# detach_mounts_under DIR: detach every mount at or below DIR, deepest first. A build killed midway
# leaves mounts in its root filesystem (mmdebstrap's /proc, /sys and /dev/pts; the chroot step's /dev
# and /proc); removing the tree then fails on a read-only sysfs, or deletes the host's device nodes
# through a bind mount of /dev.
detach_mounts_under() {
  local dir
  dir="$(realpath -m "$1")"
  awk -v dir="$dir" '$5 == dir || index($5, dir "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r mountpoint; do umount -l "$mountpoint"; done
}
