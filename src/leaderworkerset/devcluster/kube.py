"""A minimal synchronous REST client for the dev cluster's own needs
(readiness probes, fake nodes, simulated kubelet events).

The product talks to Kubernetes through ``leaderworkerset.runtime``; this
module exists so that starting a cluster does not depend on it.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml


class RestClient:
    def __init__(self, server: str, ca: Path, cert: Path, key: Path, timeout: float = 10.0) -> None:
        self.server = server.rstrip("/")
        self._timeout = timeout
        self._tls = ssl.create_default_context(cafile=str(ca))
        self._tls.load_cert_chain(str(cert), str(key))

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self._tls, timeout=self._timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    @classmethod
    def from_kubeconfig(cls, path: Path, timeout: float = 10.0) -> RestClient:
        config = yaml.safe_load(path.read_text())
        context_name = config["current-context"]
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        # ssl wants files; kubeconfigs embed the PEM data. The context reads them once, in the
        # constructor, so the private key does not outlive it on disk.
        tmp = Path(tempfile.mkdtemp(prefix="lws-kubeconfig-"))
        try:
            files = {}
            for field, name in (
                ("certificate-authority-data", "ca.crt"),
                ("client-certificate-data", "client.crt"),
                ("client-key-data", "client.key"),
            ):
                source = cluster if field.startswith("certificate-authority") else user
                target = tmp / name
                target.write_bytes(base64.b64decode(source[field]))
                files[name] = target
            return cls(cluster["server"], files["ca.crt"], files["client.crt"], files["client.key"], timeout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def get_raw(self, path: str) -> bytes:
        status, content = self.request("GET", path)
        _check(status, content, "GET", path)
        return content

    def get(self, path: str) -> dict[str, Any] | None:
        status, content = self.request("GET", path)
        if status == 404:
            return None
        _check(status, content, "GET", path)
        result: dict[str, Any] = json.loads(content)
        return result

    def create(self, collection: str, body: dict[str, Any]) -> dict[str, Any]:
        status, content = self.request("POST", collection, body)
        if status == 409:  # already exists: creation is idempotent here
            return self.get(f"{collection}/{body['metadata']['name']}") or {}
        _check(status, content, "POST", collection)
        result: dict[str, Any] = json.loads(content)
        return result

    def watch(
        self, collection: str, resource_version: str, timeout_seconds: int = 300
    ) -> Iterator[dict[str, Any]]:
        """Watch events of a collection from `resource_version` until the server ends the stream."""
        query = f"?watch=true&resourceVersion={resource_version}&timeoutSeconds={timeout_seconds}"
        req = urllib.request.Request(self.server + collection + query)
        with urllib.request.urlopen(req, context=self._tls, timeout=self._timeout) as resp:
            for line in resp:
                if line.strip():
                    event: dict[str, Any] = json.loads(line)
                    yield event

    def patch_status(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        status, content = self.request(
            "PATCH", f"{path}/status", patch, content_type="application/strategic-merge-patch+json"
        )
        _check(status, content, "PATCH", path)
        result: dict[str, Any] = json.loads(content)
        return result


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _check(status: int, content: bytes, method: str, path: str) -> None:
    if status >= 400:
        raise ApiError(status, f"{method} {path}: HTTP {status}: {content[:500].decode(errors='replace')}")


def collection_path(obj: dict[str, Any]) -> str:
    """The REST collection an object is created in (core and named groups, namespaced or not)."""
    group_version = obj["apiVersion"]
    base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    namespace = (obj.get("metadata") or {}).get("namespace")
    plural = obj["kind"].lower() + ("es" if obj["kind"].endswith("s") else "s")
    return f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"


def is_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def ready_node_count(client: RestClient) -> int:
    nodes = client.get("/api/v1/nodes") or {"items": []}
    return sum(1 for n in nodes["items"] if is_ready(n))


def etcd_post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    """One call to etcd's JSON gateway (v3 API over HTTP)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
        return answer


def healthz_insecure(port: int) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=ctx, timeout=2) as resp:
        return bool(resp.read() == b"ok")
