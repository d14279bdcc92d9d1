"""`lws manager` authenticates through an exec credential plugin from its kubeconfig (lightkube's
loader), as a process started the way the image starts it (`cli/deferredmodules.py` defers
lightkube's generated models and parses the flags without typer's runtime: the auth path must not
depend on either)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lightkube import AsyncClient

from leaderworkerset.api.installation import SERVICE_ACCOUNT_NAME
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from tests.support import serviceaccount
from tests.support.manager import ManagerProcess

REQUESTS = re.compile(r'^rest_client_requests_total\{code="(\d+)"[^}]*\} (\S+)$', re.MULTILINE)


async def test_the_manager_process_authenticates_with_an_exec_plugin(
    full_cluster: LocalCluster, full_kube: AsyncClient, api: KubeClient, full_namespace: str, tmp_path: Path
) -> None:
    await install_crds(full_kube)
    await serviceaccount.install_for_local_manager(api, webhook_configurations=False)
    token_file, runs, plugin = tmp_path / "token", tmp_path / "runs", tmp_path / "plugin.py"
    token_file.write_text(serviceaccount.token(full_cluster, SERVICE_ACCOUNT_NAME))
    kubeconfig = serviceaccount.kubeconfig_with_user(
        full_cluster, serviceaccount.exec_user(plugin, token_file, runs), tmp_path / "kubeconfig"
    )
    # Controllers only, for one fresh namespace: a session's shared manager may be running beside it.
    manager = ManagerProcess(
        full_cluster,
        name="lws-manager-exec-auth",
        kubeconfig=kubeconfig,
        extra_args=("--disable-webhooks", "--watch-namespace", full_namespace),
    )
    await manager.start()  # ready: its informers listed and watch through the plugin's token
    try:
        codes = {code: float(count) for code, count in REQUESTS.findall(manager.scrape())}
        log = manager.log_text()
    finally:
        await manager.stop()
    assert runs.read_text() == "1", "the plugin ran once and its token was kept"
    assert codes.get("200", 0) > 0, json.dumps(codes)
    assert {code for code in codes if code in ("401", "403")} == set(), json.dumps(codes)
    assert serviceaccount.rbac_denials(log) == []
