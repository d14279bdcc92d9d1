"""Fixtures of the bad-input chaos tests: the webhook fixtures of the integration suite (our server
on 127.0.0.1 registered with the session's real kube-apiserver, scoped to labelled namespaces) are
reused as they are, so the fuzzer and the abuse tests hit exactly what those tests hit."""

from tests.integration.webhooks.conftest import (  # noqa: F401 (fixtures)
    lws_crds,
    registered_webhooks,
    webhook_client,
    webhook_namespace,
    webhook_server,
)
