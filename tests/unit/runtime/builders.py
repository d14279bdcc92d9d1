"""Tiny object builders for runtime unit tests (plain dicts as the API server would send them)."""

from __future__ import annotations

from typing import Any

import msgspec


def obj(
    name: str,
    namespace: str = "default",
    *,
    kind: str = "Pod",
    rv: str = "1",
    uid: str | None = None,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "resourceVersion": rv,
        "uid": uid or f"uid-{name}",
    }
    if labels:
        meta["labels"] = labels
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, **extra}


def owner(name: str, kind: str = "LeaderWorkerSet", api_version: str = "leaderworkerset.x-k8s.io/v1",
          controller: bool = True) -> dict[str, Any]:  # fmt: skip
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
        "controller": controller,
    }


def encode(value: Any) -> bytes:
    return msgspec.json.encode(value)


def list_body(items: list[dict[str, Any]], rv: str, cont: str | None = None) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return encode({"kind": "List", "apiVersion": "v1", "metadata": meta, "items": items})


def event(kind: str, o: dict[str, Any]) -> bytes:
    return encode({"type": kind, "object": o})


def bookmark(rv: str) -> bytes:
    return encode({"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": rv}}})


def initial_events_end(rv: str) -> bytes:
    """The bookmark that ends a streaming list's initial events."""
    meta = {"resourceVersion": rv, "annotations": {"k8s.io/initial-events-end": "true"}}
    return encode({"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": meta}})


def error_event(code: int, reason: str, message: str = "") -> bytes:
    return encode(
        {"type": "ERROR", "object": {"kind": "Status", "code": code, "reason": reason, "message": message}}
    )
