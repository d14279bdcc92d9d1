"""`lws install` on the full cluster waits for what it promises, with the in-cluster certificate path.

kwok runs the Deployment's pods (as fakes: the image is never pulled), so the Deployment becomes
available and the webhook Service gets ready endpoints; the manager runs as a local process under
the ServiceAccount in its in-cluster certificate mode (no dev URL mode, no extra grants): it fills
the Secret and injects the CA into the Service-based webhook configurations. `lws install` returns
only once both happened. Nothing calls the webhooks here (the fake pods cannot answer).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from lightkube.core.exceptions import ApiError
from lightkube.resources.admissionregistration_v1 import (
    MutatingWebhookConfiguration,
    ValidatingWebhookConfiguration,
)
from lightkube.resources.core_v1 import Secret
from typer.testing import CliRunner, Result

from leaderworkerset.api import constants as c
from leaderworkerset.api.installation import CONTROLLER_MANAGER_NAME, SERVICE_ACCOUNT_NAME
from leaderworkerset.cli import app as cli_app
from leaderworkerset.install import apply as installer
from leaderworkerset.install.manifests import InstallOptions, render
from leaderworkerset.runtime.resources import ResourceRef
from tests.e2e.install.conftest import InstallEnv, started, stopped
from tests.support.manager import ManagerProcess
from tests.support.serviceaccount import rbac_denials
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

# one install cluster for the package (install_env, conftest.py): one worker runs it
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("install")]

DEPLOYMENTS = ResourceRef("apps", "v1", "Deployment", "deployments")


class InClusterCertManager(ManagerProcess):
    """`lws manager` as a pod runs it (Service-based webhooks, internal certificates), minus the pod."""

    @property
    def argv(self) -> list[str]:
        argv = super().argv
        at = argv.index("--webhook-url-host")
        return argv[:at] + argv[at + 2 :]


def _invoke(*args: str) -> Result:
    cli_app.register()
    return CliRunner().invoke(cli_app.app, list(args))


async def test_lws_install_waits_for_the_deployment_and_the_injected_ca(
    install_env: InstallEnv, tmp_path: Path
) -> None:
    api, cluster = install_env.api, install_env.cluster
    kubeconfig = install_env.kubeconfig_as(SERVICE_ACCOUNT_NAME, tmp_path / "kubeconfig")
    manager = InClusterCertManager(cluster, "lws-manager-in-cluster-certs", kubeconfig=kubeconfig)
    # A clean start: no CA anywhere yet (earlier tests' managers issued and injected their own).
    for resource, name, namespace in (
        (MutatingWebhookConfiguration, c.MUTATING_WEBHOOK_CONFIGURATION_NAME, None),
        (ValidatingWebhookConfiguration, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME, None),
        (Secret, c.DEFAULT_WEBHOOK_SECRET_NAME, c.DEFAULT_NAMESPACE),
    ):
        with contextlib.suppress(ApiError):
            await api.lightkube.delete(resource, name, namespace=namespace)
    try:
        install = asyncio.create_task(
            asyncio.to_thread(
                _invoke,
                "install",
                "--kubeconfig",
                str(cluster.kubeconfig),
                "--image",
                "example.invalid/lws:e2e",
                "--timeout",
                str(LONG_TIMEOUT),
            )
        )

        async def deployment_available() -> bool:
            deployment = await api.get(DEPLOYMENTS, c.DEFAULT_NAMESPACE, CONTROLLER_MANAGER_NAME)
            return bool((deployment.get("status") or {}).get("availableReplicas") == 2)

        await eventually(deployment_available, timeout=LONG_TIMEOUT)
        # Past its Deployment stage (it polls every second), it keeps waiting while no CA is injected.
        await consistently(lambda: not install.done(), duration=3)
        await started(manager)
        result = await install
        assert result.exit_code == 0, result.output
        assert f"Deployment/{c.DEFAULT_NAMESPACE}/{CONTROLLER_MANAGER_NAME} available" in result.output
        assert "webhooks ready" in result.output
        validating = await api.lightkube.get(
            ValidatingWebhookConfiguration, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME
        )
        for webhook in validating.webhooks or []:
            assert webhook.clientConfig.service is not None
            assert webhook.clientConfig.caBundle
        # Authorizer refusals only: a namespace another test left terminating refuses events with a
        # 403 of its own ("being terminated"), which says nothing about the install's RBAC.
        assert rbac_denials(manager.log_text()) == []
    finally:
        await stopped(manager)
        # Back to the package's baseline: the Deployment at zero, as the other install tests expect.
        await installer.apply_objects(api.lightkube, render(InstallOptions(replicas=0)))
