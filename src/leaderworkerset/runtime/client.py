"""The API client: dict-level calls the reconcilers use, on our aiohttp transport (runtime/transport.py).

`KubeClient` owns one `Transport` (kubeconfig, in-cluster or exec auth from lightkube's loader; TLS;
the client-side QPS/burst bucket, defaults 500/500 from the Configuration's clientConnection) and
shares it with the reflectors. Bodies are decoded with msgspec straight from the response bytes.

Writes use field manager `lws`. Server-side apply is always forced: the controller owns the fields it
declares, like upstream's `client.Apply` with `ForceOwnership`.

`lightkube` is a lightkube `AsyncClient` on the same configuration, made on first use, for the CLI
and tools that want typed calls (installing CRDs); the manager's controllers never touch it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
import msgspec
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError
from prometheus_client import Counter

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.runtime.clock import Clock, RealClock
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.ratelimit import TokenBucket
from leaderworkerset.runtime.resources import ResourceRef
from leaderworkerset.runtime.transport import Transport

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"

PROPAGATION_BACKGROUND = "Background"
PROPAGATION_FOREGROUND = "Foreground"
PROPAGATION_ORPHAN = "Orphan"

DEFAULT_QPS = c.DEFAULT_CLIENT_QPS
DEFAULT_BURST = c.DEFAULT_CLIENT_BURST


@dataclass(frozen=True)
class ClientOptions:
    kubeconfig: str | None = None  # None: in-cluster, then $KUBECONFIG, then ~/.kube/config
    context: str | None = None
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    field_manager: str = c.FIELD_MANAGER
    timeout: float = 30.0


def _encode(body: Any) -> bytes:
    return msgspec.json.encode(body)


_OBJ_DECODER = msgspec.json.Decoder(dict[str, Any])


class KubeClient:
    def __init__(self, transport: Transport, options: ClientOptions, config: SingleConfig) -> None:
        self.transport = transport
        self.options = options
        self.config = config
        self.field_manager = options.field_manager
        self._lightkube: AsyncClient | None = None

    @property
    def lightkube(self) -> AsyncClient:
        """A lightkube AsyncClient on the same configuration (typed calls for tools; made on first use)."""
        if self._lightkube is None:
            self._lightkube = AsyncClient(
                config=self.config,
                field_manager=self.field_manager,
                timeout=httpx2.Timeout(self.options.timeout),
            )
        return self._lightkube

    def instrument(self, requests_total: Counter) -> None:
        """Count every response in `rest_client_requests_total{code,method,host}` (client-go's metric)."""
        self.transport.instrument(requests_total)

    @property
    def default_namespace(self) -> str:
        return str(self.config.namespace)

    async def close(self) -> None:
        await self.transport.close()
        if self._lightkube is not None:
            await self._lightkube.close()

    # ----- raw requests -------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        params: Mapping[str, str] | None = None,
    ) -> MutableObj:
        data = await self.transport.checked(
            method,
            path,
            params=params,
            body=_encode(body) if body is not None else None,
            content_type=content_type if body is not None else None,
        )
        return _OBJ_DECODER.decode(data) if data else {}

    async def serves(self, group_version: str, plural: str) -> bool:
        """Whether the API server serves `plural` in `group_version` (discovery; one GET)."""
        try:
            listing = await self.request("GET", f"/apis/{group_version}")
        except ApiStatusError as err:
            if err.code == 404:
                return False
            raise
        return any(r.get("name") == plural for r in listing.get("resources") or [])

    async def server_version(self) -> str:
        """The API server's version (gitVersion of /version, e.g. v1.36.3)."""
        info = await self.request("GET", "/version")
        return str(info.get("gitVersion", "unknown"))

    # ----- reads (for the rare non-cached read, e.g. a live re-read after a conflict) -------------
    async def get(self, ref: ResourceRef, namespace: str | None, name: str) -> MutableObj:
        return await self.request("GET", ref.object_path(namespace, name))

    async def get_or_none(self, ref: ResourceRef, namespace: str | None, name: str) -> MutableObj | None:
        """A GET that reads a missing object as None (a fresh read, e.g. before a guarded write)."""
        try:
            return await self.get(ref, namespace, name)
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise

    async def list(
        self,
        ref: ResourceRef,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        field_selector: str | None = None,
    ) -> list[MutableObj]:
        params = {"labelSelector": label_selector} if label_selector else {}
        if field_selector:
            params["fieldSelector"] = field_selector
        items: list[MutableObj] = (
            await self.request("GET", ref.collection_path(namespace), params=params)
        ).get("items") or []
        return items

    # ----- writes -------------------------------------------------------------------------------
    def _write_params(self, dry_run: bool = False, **extra: str) -> dict[str, str]:
        params = {"fieldManager": self.field_manager, **extra}
        if dry_run:
            params["dryRun"] = "All"
        return params

    async def create(self, ref: ResourceRef, obj: Any, namespace: str | None = None) -> MutableObj:
        ns = namespace if namespace is not None else _namespace_of(obj)
        return await self.request("POST", ref.collection_path(ns), body=obj, params=self._write_params())

    async def update(self, ref: ResourceRef, obj: Any, subresource: str | None = None) -> MutableObj:
        """PUT (optimistic concurrency through metadata.resourceVersion in `obj`)."""
        path = ref.object_path(_namespace_of(obj), _name_of(obj), subresource)
        return await self.request("PUT", path, body=obj, params=self._write_params())

    async def apply(
        self,
        ref: ResourceRef,
        obj: Any,
        *,
        subresource: str | None = None,
        force: bool = True,
        dry_run: bool = False,
    ) -> MutableObj:
        """Server-side apply `obj` (must carry apiVersion, kind, metadata.name/namespace)."""
        path = ref.object_path(_namespace_of(obj), _name_of(obj), subresource)
        params = self._write_params(dry_run, force="true") if force else self._write_params(dry_run)
        return await self.request("PATCH", path, body=obj, content_type=APPLY_PATCH, params=params)

    async def apply_status(self, ref: ResourceRef, obj: Any, *, force: bool = True) -> MutableObj:
        return await self.apply(ref, obj, subresource="status", force=force)

    async def patch(
        self,
        ref: ResourceRef,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = MERGE_PATCH,
        subresource: str | None = None,
    ) -> MutableObj:
        path = ref.object_path(namespace, name, subresource)
        return await self.request(
            "PATCH", path, body=patch, content_type=patch_type, params=self._write_params()
        )

    async def merge_patch(
        self, ref: ResourceRef, namespace: str | None, name: str, patch: Mapping[str, Any], **kw: Any
    ) -> MutableObj:
        return await self.patch(ref, namespace, name, patch, patch_type=MERGE_PATCH, **kw)

    async def json_patch(
        self, ref: ResourceRef, namespace: str | None, name: str, ops: Sequence[Mapping[str, Any]], **kw: Any
    ) -> MutableObj:
        return await self.patch(ref, namespace, name, list(ops), patch_type=JSON_PATCH, **kw)

    async def patch_status(
        self, ref: ResourceRef, namespace: str | None, name: str, patch: Mapping[str, Any]
    ) -> MutableObj:
        return await self.merge_patch(ref, namespace, name, patch, subresource="status")

    async def delete(
        self,
        ref: ResourceRef,
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = PROPAGATION_BACKGROUND,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> MutableObj:
        """Delete with DeleteOptions; `uid`/`resource_version` become preconditions (409 if stale)."""
        options: MutableObj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation:
            options["propagationPolicy"] = propagation
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        return await self.request("DELETE", ref.object_path(namespace, name), body=options)

    async def delete_incarnation(self, ref: ResourceRef, namespace: str | None, name: str, uid: str) -> bool:
        """Foreground-delete exactly the object with `uid` (a precondition, so a same-name
        replacement created since our read is never hit); False when it is gone or was replaced."""
        try:
            await self.delete(ref, namespace, name, propagation=PROPAGATION_FOREGROUND, uid=uid)
        except ApiStatusError as err:
            if err.code in (404, 409):
                return False
            raise
        return True


def _metadata(obj: Any) -> Any:
    return obj.get("metadata") or {} if isinstance(obj, Mapping) else obj.metadata


def _namespace_of(obj: Any) -> str | None:
    meta = _metadata(obj)
    ns = meta.get("namespace") if isinstance(meta, Mapping) else meta.namespace
    return str(ns) if ns else None


def _name_of(obj: Any) -> str:
    meta = _metadata(obj)
    name = meta.get("name") if isinstance(meta, Mapping) else meta.name
    if not name:
        raise ValueError("object has no metadata.name")
    return str(name)


def load_config(kubeconfig: str | None = None, context: str | None = None) -> SingleConfig:
    """kubeconfig file if given, else in-cluster service account, else $KUBECONFIG / ~/.kube/config."""
    loaded = KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()
    config = loaded.get(context_name=context)
    if config is None:
        raise ConfigError(f"no context {context!r} in the configuration")
    return config


def new_client(options: ClientOptions | None = None, clock: Clock | None = None) -> KubeClient:
    opts = options or ClientOptions()
    return client_for(load_config(opts.kubeconfig, opts.context), opts, clock)


def client_for(config: SingleConfig, options: ClientOptions, clock: Clock | None = None) -> KubeClient:
    """A client of the cluster and user that a loaded configuration names."""
    bucket = TokenBucket(options.qps, options.burst, clock or RealClock())
    return KubeClient(Transport.from_config(config, bucket, options.timeout), options, config)


async def serves_pod_resize(client: KubeClient) -> bool:
    """The API server has the pods' `resize` subresource (InPlacePodVerticalScaling, GA in 1.35):
    the kubelets resize CPU and memory of running containers."""
    discovery = await client.request("GET", "/api/v1")
    return any(r.get("name") == "pods/resize" for r in discovery.get("resources") or [])
