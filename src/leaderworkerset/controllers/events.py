"""Events the controllers record on a LeaderWorkerSet, shared by the LWS and pod controllers."""

from __future__ import annotations

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import ControllerEvent, MutableObj, namespace_of
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.events import EventRecorder, ObjectReference, object_ref

_RELATED_API_VERSIONS = {
    "ControllerRevision": "apps/v1",
    "Deployment": "apps/v1",
    "Pod": "v1",
    "StatefulSet": "apps/v1",
}


def record(recorder: EventRecorder, lws: MutableObj, event: ControllerEvent) -> None:
    """Record a core-decided event on the LWS, resolving its related object (kind, name)."""
    related = None
    if event.related is not None:
        kind, name = event.related
        related = ObjectReference(
            apiVersion=_RELATED_API_VERSIONS.get(kind, ""),
            kind=kind,
            namespace=namespace_of(lws),
            name=name,
        )
    recorder.record(lws_ref(lws), event.type, event.reason, event.action, event.message, related)


def error_text(err: BaseException) -> str:
    """What Go's `%v` prints for an API error: the Status message, without code and reason."""
    if isinstance(err, ApiStatusError) and err.status.message:
        return err.status.message
    return str(err)


def lws_ref(lws: MutableObj) -> ObjectReference:
    return object_ref(lws, api_version=c.LWS_API_VERSION, kind=c.LWS_KIND)
