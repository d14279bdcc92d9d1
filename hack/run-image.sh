#!/usr/bin/env bash
# Run the image built by hack/build-image.sh through its own OCI config (entrypoint, user, env),
# with runc when this machine allows it (read-only root, /tmp as tmpfs, host network so the local
# cluster on 127.0.0.1 is reachable), else chroot as the image's user.
#
#   hack/run-image.sh OUT_DIR [ARGS...]     # ARGS are appended to the entrypoint (`lws manager`)
#   MOUNT=/dir hack/run-image.sh ...        # also bind /dir read-only at the same path (a kubeconfig)
set -euo pipefail
out="$(realpath "$1")"; shift
bundle="$(mktemp -d /tmp/lws-image-run.XXXXXX)"
# The chroot fallback binds the MOUNT directories into the unpacked root: unmount them before deleting
# the bundle, so that the deletion never reaches into a bound directory (it used to empty it), and leave
# the bundle behind rather than delete through a mount that would not go.
cleanup() {
  for mount in ${MOUNT//:/ }; do
    if mountpoint -q "$bundle/b/rootfs$mount" 2>/dev/null; then umount "$bundle/b/rootfs$mount" || true; fi
  done
  if findmnt -rno TARGET | grep -q "^$bundle/"; then
    echo "left $bundle in place: something is still mounted under it" >&2
  else
    rm -rf --one-file-system "$bundle"
  fi
}
trap cleanup EXIT
umoci unpack --image "$out/oci:lws" "$bundle/b" >/dev/null
python3 - "$bundle/b/config.json" "$@" <<'PY'
import json, sys
path, extra = sys.argv[1], sys.argv[2:]
spec = json.load(open(path))
spec["process"]["args"] = spec["process"]["args"] + extra
spec["process"]["terminal"] = False
spec["root"]["readonly"] = True
spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
spec["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "size=64m"]})
spec["mounts"].append({"destination": "/etc/resolv.conf", "type": "bind", "source": "/etc/resolv.conf", "options": ["rbind", "ro"]})
import os
for mount in filter(None, os.environ.get("MOUNT", "").split(":")):
    spec["mounts"].append({"destination": mount, "type": "bind", "source": mount, "options": ["rbind", "ro"]})
json.dump(spec, open(path, "w"))
print("entrypoint:", " ".join(spec["process"]["args"]), "user:", spec["process"]["user"], file=sys.stderr)
PY
if runc --root "$bundle/state" run --bundle "$bundle/b" "lws-$$" 2>"$bundle/runc.err"; then
  exit 0
fi
echo "runc unavailable here ($(tail -1 "$bundle/runc.err")); running the same entrypoint with chroot" >&2
args="$(python3 -c 'import json,sys,shlex; s=json.load(open(sys.argv[1])); print(shlex.join(s["process"]["args"]))' "$bundle/b/config.json")"
user="$(python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["process"]["user"]; print("%d:%d" % (u["uid"], u["gid"]))' "$bundle/b/config.json")"
env_="$(python3 -c 'import json,sys,shlex; print(shlex.join(json.load(open(sys.argv[1]))["process"]["env"]))' "$bundle/b/config.json")"
mkdir -p "$bundle/b/rootfs/tmp" && chmod 1777 "$bundle/b/rootfs/tmp"
for mount in ${MOUNT//:/ }; do
  mkdir -p "$bundle/b/rootfs$mount"
  mount --bind "$mount" "$bundle/b/rootfs$mount"
  mount -o remount,bind,ro "$bundle/b/rootfs$mount"  # read-only, as the runc path binds it
done
eval "chroot --userspec=$user $bundle/b/rootfs /usr/bin/env -i $env_ $args"
