"""Kueue's own LeaderWorkerSet e2e specs (`test/e2e/singlecluster`, label `feature:leaderworkerset`)
against our controller on a local full cluster. On demand, not part of `make test`:

    ./hack/bootstrap.sh run python -m tests.kueue_e2e [--focus REGEX] [--keep]

The spec binary is compiled from the `sigs.k8s.io/kueue` module in Go's module cache with the
module's own go.mod (`go test -c`), cached beside the tools. The cluster gets our CRDs, our manager
(controllers and webhooks), and Kueue (tests/support/kueue.py) with leader election on. The suite's
ResourceFlavors select nodes labelled `instance-type: on-demand|spot`, so the fake nodes get those
labels as in Kueue's kind cluster. Its BeforeSuite waits for the Deployments
`kueue-system/kueue-controller-manager` and `lws-system/lws-controller-manager` to be available and
for ready endpoints of `kueue-webhook-service`; here both managers are processes, so stand-in
Deployments of the same names (kwok pods, which run nothing) and that Service satisfy the wait.
Prints ginkgo's summary and exits with its code.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from filelock import FileLock

from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build, tools, versions
from leaderworkerset.devcluster.build import COMPLETE_MARKER, publish, staged_output
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import DEPLOYMENTS, NAMESPACES, NODES, SERVICES
from tests.support import kueue
from tests.support.manager import ManagerProcess

PACKAGE = "./test/e2e/singlecluster"
LABEL_FILTER = "feature:leaderworkerset"
BINARY = "singlecluster.test"
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"  # never pulled: kwok runs no container


def spec_binary() -> Path:
    """`go test -c` of Kueue's singlecluster e2e package, built once (cached, locked)."""
    out = (
        versions.cache_root()
        / "tools"
        / f"kueue-e2e-{tools.KUEUE.version}_{build.go_version()}_{versions.machine()}"
    )
    if (out / COMPLETE_MARKER).is_file():
        return out / BINARY
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out.parent / f"{out.name}.lock")):
        if not (out / COMPLETE_MARKER).is_file():
            started = time.monotonic()
            env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
            with staged_output(out) as tmp:
                subprocess.run(
                    ["go", "test", "-c", "-trimpath", "-o", str(tmp / BINARY), PACKAGE],
                    cwd=kueue.module_dir(), env=env, check=True,
                )  # fmt: skip
                seconds = time.monotonic() - started
                publish(tmp, out, f"{PACKAGE} of {kueue.MODULE}@{tools.KUEUE.version} in {seconds:.0f}s\n")
    return out / BINARY


def stand_in(namespace: str, name: str) -> dict[str, Any]:
    """A Deployment named like the real manager's, of one kwok pod that runs nothing."""
    labels = {"app.kubernetes.io/name": name, "control-plane": "controller-manager"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "manager", "image": "stand-in:for-a-local-process"}]},
            },
        },
    }


async def prepare(cluster: LocalCluster, api: KubeClient) -> tuple[ManagerProcess, kueue.KueueManager]:
    # The suite's ResourceFlavors select nodes by `instance-type`, as labelled in Kueue's kind
    # cluster (hack/testing/kind-cluster.yaml): half on-demand, half spot.
    nodes = sorted(node["metadata"]["name"] for node in await api.list(NODES, None))
    for i, node in enumerate(nodes):
        kind = "on-demand" if i < len(nodes) // 2 else "spot"
        await api.merge_patch(NODES, None, node, {"metadata": {"labels": {"instance-type": kind}}})
    await install_crds(api.lightkube)
    ours = ManagerProcess(cluster, "lws-manager")
    await ours.start()
    manager = kueue.KueueManager(cluster, api, options=kueue.KueueOptions(leader_elect=True))
    await manager.install()
    for namespace, name in (
        (kueue.NAMESPACE, "kueue-controller-manager"),
        ("lws-system", "lws-controller-manager"),
    ):
        await api.apply(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        await api.apply(DEPLOYMENTS, stand_in(namespace, name))
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kueue-webhook-service", "namespace": kueue.NAMESPACE},
        "spec": {
            "selector": {"app.kubernetes.io/name": "kueue-controller-manager"},
            "ports": [{"port": 443, "targetPort": 9443}],
        },
    }
    await api.apply(SERVICES, service)
    return ours, manager


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kueue_e2e", description=__doc__.split("\n")[0])
    parser.add_argument("--focus", default="", help="ginkgo --focus regular expression")
    parser.add_argument("--keep", action="store_true", help="leave the cluster's work dir behind")
    args = parser.parse_args(argv)
    binary = await asyncio.to_thread(spec_binary)
    workdir = Path(tempfile.mkdtemp(prefix="lws-kueue-e2e-"))
    options = ClusterOptions(shape="full", nodes=4, die_with_parent=True, supervise=True)
    cluster = LocalCluster("kueue-e2e", workdir, build.ensure_binaries(), options)
    await asyncio.to_thread(cluster.start)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="kueue-e2e"))
    ours: ManagerProcess | None = None
    manager: kueue.KueueManager | None = None
    try:
        ours, manager = await prepare(cluster, api)
        env = {
            **os.environ,
            "KUBECONFIG": str(cluster.kubeconfig),
            "E2E_TEST_AGNHOST_IMAGE": AGNHOST,
            "PROJECT_DIR": str(kueue.module_dir() / "Makefile"),
            "ARTIFACTS": str(workdir),
        }
        command = [str(binary), f"--ginkgo.label-filter={LABEL_FILTER}", "--ginkgo.v", "--ginkgo.no-color"]
        if args.focus:
            command.append(f"--ginkgo.focus={args.focus}")
        proc = await asyncio.create_subprocess_exec(*command, cwd=workdir, env=env)
        return await proc.wait()
    finally:
        if manager is not None:
            await manager.stop()
        if ours is not None:
            await ours.stop()
        await api.close()
        cluster.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"work dir (logs): {workdir}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
