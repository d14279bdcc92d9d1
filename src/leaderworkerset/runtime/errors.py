"""API errors as Kubernetes Status objects, and the predicates reconcilers branch on."""

from __future__ import annotations

import msgspec
from lightkube.core.exceptions import ApiError as LightkubeApiError


class ApiStatus(msgspec.Struct, omit_defaults=True):
    code: int = 0
    reason: str = ""
    message: str = ""


class ApiStatusError(Exception):
    """A request failed with a Kubernetes Status (non-2xx response or watch ERROR event)."""

    def __init__(self, status: ApiStatus) -> None:
        super().__init__(f"{status.code} {status.reason}: {status.message}")
        self.status = status

    @property
    def code(self) -> int:
        return self.status.code

    @property
    def reason(self) -> str:
        return self.status.reason

    @property
    def expired(self) -> bool:
        """410 Gone / Expired: the resourceVersion is too old; only a fresh list can continue."""
        return self.status.code == 410 or self.status.reason in ("Expired", "Gone")


_STATUS_DECODER = msgspec.json.Decoder(ApiStatus)


def status_from_response(code: int, body: bytes) -> ApiStatus:
    try:
        status = _STATUS_DECODER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        status = ApiStatus(message=body[:300].decode(errors="replace"))
    if not status.code:
        status.code = code
    return status


def status_code(error: BaseException) -> int | None:
    """The HTTP status code of an API error from our client or from lightkube, else None."""
    if isinstance(error, ApiStatusError):
        return error.code
    if isinstance(error, LightkubeApiError):
        code = error.status.code
        return int(code) if code is not None else None
    return None


def outcome_unknown(error: BaseException) -> bool:
    """A write that failed without the API server's verdict (a cut connection, a timeout) or with a
    5xx: it may have happened all the same."""
    code = status_code(error)
    return code is None or code >= 500


def is_not_found(error: BaseException) -> bool:
    return status_code(error) == 404


def is_conflict(error: BaseException) -> bool:
    return status_code(error) == 409 and not is_already_exists(error)


def is_already_exists(error: BaseException) -> bool:
    if isinstance(error, ApiStatusError):
        return error.reason == "AlreadyExists"
    if isinstance(error, LightkubeApiError):
        return error.status.reason == "AlreadyExists"
    return False


def is_precondition_failed(error: BaseException) -> bool:
    """Delete preconditions (uid/resourceVersion) not met: the server answers 409 Conflict."""
    return status_code(error) == 409
