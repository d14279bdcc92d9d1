"""AdmissionReview (admission.k8s.io/v1) in, AdmissionReview out, for every webhook path we serve.

Responses follow controller-runtime's shapes, which is what the API server turns into the text
users see: a denial is HTTP 403 `Forbidden` with the aggregated field errors as the message
(`admission webhook "<name>" denied the request: <message>`); a body that cannot be read is a 400;
a mutation is a base64 JSON Patch computed as the diff of the original and the mutated object.
"""

import base64
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired.podmutation import PodMutationError
from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.webhooks import disaggregatedset, inplacerestart, leaderworkerset, pod
from leaderworkerset.webhooks.quarantine import QuarantinedNodes
from leaderworkerset.webhooks.scheduling import SchedulingAdmission

ADMISSION_API_VERSION = "admission.k8s.io/v1"
ADMISSION_KIND = "AdmissionReview"
# controller-runtime's decoder knows both versions and refuses any other kind or version.
_ADMISSION_API_VERSIONS = frozenset({ADMISSION_API_VERSION, "admission.k8s.io/v1beta1"})
OPERATION_CREATE = "CREATE"
OPERATION_UPDATE = "UPDATE"


@dataclass(frozen=True)
class WebhookOptions:
    """Manager-level facts the handlers need; the defaults suit tests and the local dev cluster."""

    scheduling: SchedulingAdmission = field(default_factory=SchedulingAdmission)
    pod_group_injector: pod.PodGroupInjector | None = None
    token_source: pod.TokenSource = pod.random_token
    # The nodes a set's new pods avoid (opt-in node quarantine); None: no view, nothing avoided.
    quarantined_nodes: QuarantinedNodes | None = None
    # In-place group restart: whether the cluster supports RestartAllContainers (None: not asked,
    # as in tests), each set's annotations as the pod webhook sees them, and the agent's image.
    restart_all_containers: inplacerestart.SupportProbe | None = None
    set_annotations: inplacerestart.SetAnnotations | None = None
    restart_agent_image: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What a handler decided, before it is wrapped into an AdmissionResponse."""

    allowed: bool = True
    code: int = 200
    reason: str = ""
    message: str = ""
    mutated: MutableObj | None = None
    warnings: tuple[str, ...] = ()
    errors: tuple[v.FieldError, ...] = ()


class RequestError(ValueError):
    """The review cannot be decoded; answered with HTTP 400 as controller-runtime does."""


Handler = Callable[[MutableObj, WebhookOptions], Outcome]


def denied(message: str, errors: tuple[v.FieldError, ...] = (), warnings: tuple[str, ...] = ()) -> Outcome:
    return Outcome(False, 403, "Forbidden", message, None, warnings, errors)


def _from_errors(errors: list[v.FieldError], warnings: list[str] | None = None) -> Outcome:
    if errors:
        return denied(v.aggregate_message(errors), tuple(errors), tuple(warnings or ()))
    return Outcome(warnings=tuple(warnings or ()))


def _object(request: MutableObj, key: str = "object") -> MutableObj:
    obj = request.get(key)
    if not isinstance(obj, dict):
        raise RequestError("there is no content to decode")
    return obj


def _old_object(request: MutableObj) -> MutableObj | None:
    return _object(request, "oldObject") if request.get("operation") == OPERATION_UPDATE else None


def mutate_lws(request: MutableObj, options: WebhookOptions) -> Outcome:
    del options
    return Outcome(mutated=leaderworkerset.default_lws(_object(request)))


def validate_lws(request: MutableObj, options: WebhookOptions) -> Outcome:
    new, old = _object(request), _old_object(request)
    support = inplacerestart.validate_support(new, old, options.restart_all_containers)
    if old is None:
        return _from_errors(leaderworkerset.validate_create(new, options.scheduling) + support)
    return _from_errors(leaderworkerset.validate_update(old, new, options.scheduling) + support)


def mutate_pod(request: MutableObj, options: WebhookOptions) -> Outcome:
    obj = _object(request)
    shape_error = pod.shape_error(obj)
    if shape_error:
        raise RequestError(f"cannot decode the pod: {shape_error}")
    try:
        mutated = pod.default_pod(
            obj,
            pod_group_injector=options.pod_group_injector,
            token_source=options.token_source,
            avoided_nodes=_quarantined_nodes(request, obj, options),
        )
    except PodMutationError as err:
        return denied(str(err))
    set_name = _set_name(obj)
    if set_name and mutated is not obj:
        inplacerestart.equip(
            mutated,
            _namespace(request, obj),
            set_name,
            options.set_annotations,
            options.restart_agent_image,
            options.restart_all_containers,
        )
    return Outcome(mutated=mutated)


def _set_name(obj: MutableObj) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(c.LABEL_SET_NAME) or "")


def _namespace(request: MutableObj, obj: MutableObj) -> str:
    """The request's namespace: a new pod need not name one."""
    return str(request.get("namespace") or (obj.get("metadata") or {}).get("namespace") or "")


def _quarantined_nodes(request: MutableObj, obj: MutableObj, options: WebhookOptions) -> frozenset[str]:
    """The nodes the pod's set quarantines."""
    set_name = _set_name(obj)
    if options.quarantined_nodes is None or not set_name:
        return frozenset()
    return options.quarantined_nodes(_namespace(request, obj), set_name)


def validate_pod(request: MutableObj, options: WebhookOptions) -> Outcome:
    del options
    return Outcome(warnings=tuple(pod.validate_pod(_object(request), _old_object(request))))


def validate_ds(request: MutableObj, options: WebhookOptions) -> Outcome:
    del options
    warnings, errors = disaggregatedset.validate(_object(request))
    return _from_errors(errors, warnings)


HANDLERS: dict[str, Handler] = {
    c.WEBHOOK_PATH_MUTATE_LWS: mutate_lws,
    c.WEBHOOK_PATH_VALIDATE_LWS: validate_lws,
    c.WEBHOOK_PATH_MUTATE_POD: mutate_pod,
    c.WEBHOOK_PATH_VALIDATE_POD: validate_pod,
    c.WEBHOOK_PATH_VALIDATE_DS: validate_ds,
}


def json_patch(original: MutableObj, mutated: MutableObj) -> list[MutableObj]:
    """RFC 6902 operations turning `original` into `mutated`.

    Objects are diffed key by key; a list that changed is replaced whole. jsonpatch's list diff
    is avoided on purpose: with repeated equal elements (duplicate env entries) its move
    optimisation yields patches that do not reproduce the target.
    """
    operations: list[MutableObj] = []
    _diff(original, mutated, "", operations)
    return operations


def _pointer(path: str, key: str) -> str:
    return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"


def _diff(before: object, after: object, path: str, operations: list[MutableObj]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in before:
            if key not in after:
                operations.append({"op": "remove", "path": _pointer(path, key)})
        for key, value in after.items():
            if key not in before:
                operations.append({"op": "add", "path": _pointer(path, key), "value": value})
            else:
                _diff(before[key], value, _pointer(path, key), operations)
        return
    if before != after or type(before) is not type(after):
        operations.append({"op": "replace", "path": path, "value": after})


def _response(uid: str, outcome: Outcome, original: MutableObj | None) -> MutableObj:
    response: MutableObj = {"uid": uid, "allowed": outcome.allowed}
    status: MutableObj = {"metadata": {}, "code": outcome.code}
    if outcome.reason:
        status["reason"] = outcome.reason
    if outcome.message:
        status["message"] = outcome.message
    response["status"] = status
    if outcome.allowed and outcome.mutated is not None and original is not None:
        operations = json_patch(original, outcome.mutated)
        if operations:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(msgspec.json.encode(operations)).decode()
    if outcome.warnings:
        response["warnings"] = list(outcome.warnings)
    return response


def review(path: str, body: object, options: WebhookOptions | None = None) -> MutableObj:
    """Answer an AdmissionReview sent to `path`; never raises on malformed input."""
    options = options or WebhookOptions()
    request = body.get("request") if isinstance(body, dict) else None
    if not isinstance(request, dict):
        outcome = Outcome(False, 400, message="admission review has no request")
        return _envelope(body, _response("", outcome, None))
    uid = str(request.get("uid") or "")
    type_error = _review_type_error(body)
    if type_error:
        return _envelope(None, _response(uid, Outcome(False, 400, message=type_error), None))
    handler = HANDLERS.get(path)
    if handler is None:
        return _envelope(body, _response(uid, Outcome(False, 404, message=f"no webhook at {path}"), None))
    try:
        outcome = handler(request, options)
    except RequestError as err:
        outcome = Outcome(False, 400, message=str(err))
    except RecursionError:
        # Only a direct caller can nest this deep (the API server caps JSON nesting well below it).
        outcome = Outcome(False, 400, message="the object is nested too deeply to decode")
    original = request.get("object") if isinstance(request.get("object"), dict) else None
    return _envelope(body, _response(uid, outcome, original))


def bad_request(message: str) -> MutableObj:
    """The answer to a request that is no AdmissionReview we can decode (HTTP 200, code 400)."""
    return _envelope(None, _response("", Outcome(False, 400, message=message), None))


def _review_type_error(body: object) -> str:
    """Why `body` is not an AdmissionReview we can answer (absent fields default, as in
    controller-runtime's decoder), or ""."""
    assert isinstance(body, dict)
    api_version, kind = body.get("apiVersion"), body.get("kind")
    known = isinstance(api_version, str) and api_version in _ADMISSION_API_VERSIONS
    if api_version is not None and not known:
        return f"unsupported AdmissionReview apiVersion {api_version!r}"
    if kind is not None and kind != ADMISSION_KIND:
        return f"expected kind {ADMISSION_KIND}, got {kind!r}"
    return ""


def _envelope(body: object, response: MutableObj) -> MutableObj:
    api_version = body.get("apiVersion") if isinstance(body, dict) else None
    return {
        "apiVersion": api_version if isinstance(api_version, str) and api_version else ADMISSION_API_VERSION,
        "kind": ADMISSION_KIND,
        "response": response,
    }
