"""Which reconcile failures the LWS controller reports on the LWS (InvalidSpec) and which it only
retries."""

import pytest

from leaderworkerset.controllers.leaderworkerset.status import spec_problem
from leaderworkerset.core.gocompat.gonormalize import GoDecodeError
from leaderworkerset.core.gocompat.intstr import IntOrPercentError
from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError


def _api(code: int, message: str = "m") -> ApiStatusError:
    return ApiStatusError(ApiStatus(code=code, reason="r", message=message))


@pytest.mark.parametrize(
    ("error", "want"),
    [
        pytest.param(IntOrPercentError("spec.x: bad"), "spec.x: bad", id="undecodable rollout knob"),
        pytest.param(GoDecodeError("size: overflows"), "size: overflows", id="undecodable template"),
        pytest.param(
            _api(422, "spec.replicas: Invalid value"), "spec.replicas: Invalid value", id="child refused"
        ),
        pytest.param(_api(409), None, id="conflict is transient"),
        pytest.param(_api(500), None, id="server error is transient"),
        pytest.param(_api(429), None, id="throttled is transient"),
        pytest.param(TimeoutError(), None, id="timeout is transient"),
        pytest.param(ConnectionResetError(), None, id="connection reset is transient"),
    ],
)
def test_spec_problem(error: BaseException, want: str | None) -> None:
    assert spec_problem(error) == want
