"""LeaderWorkerSet defaulting webhook, mirroring upstream's defaulting table."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.webhooks.leaderworkerset import default_lws
from tests.support.builders import LeaderWorkerSetBuilder, lws

Obj = dict[str, Any]
DEFAULT_ROLLING = {"partition": 0, "maxUnavailable": 1, "maxSurge": 0}


@dataclass(frozen=True)
class DefaultingCase:
    given: LeaderWorkerSetBuilder
    want: Callable[[Obj], Any]
    expected: Any


CASES = [
    pytest.param(
        DefaultingCase(lws().replicas(None), lambda o: o["spec"]["replicas"], 1), id="nil replicas -> 1"
    ),
    pytest.param(
        DefaultingCase(lws().size(None), lambda o: o["spec"]["leaderWorkerTemplate"]["size"], 1),
        id="nil size -> 1",
    ),
    pytest.param(
        DefaultingCase(
            lws().replicas(2).size(2),
            lambda o: (o["spec"]["replicas"], o["spec"]["leaderWorkerTemplate"]["size"]),
            (2, 2),
        ),
        id="set replicas and size are kept",
    ),
    pytest.param(
        DefaultingCase(
            lws().restart_policy(""),
            lambda o: o["spec"]["leaderWorkerTemplate"]["restartPolicy"],
            c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART,
        ),
        id="empty restartPolicy -> RecreateGroupOnPodRestart",
    ),
    pytest.param(
        DefaultingCase(
            lws().restart_policy(c.RESTART_POLICY_NONE),
            lambda o: o["spec"]["leaderWorkerTemplate"]["restartPolicy"],
            c.RESTART_POLICY_NONE,
        ),
        id="set restartPolicy is kept",
    ),
    pytest.param(
        DefaultingCase(
            lws().restart_policy(c.RESTART_POLICY_DEPRECATED_DEFAULT),
            lambda o: o["spec"]["leaderWorkerTemplate"]["restartPolicy"],
            c.RESTART_POLICY_NONE,
        ),
        id="deprecated Default restartPolicy -> None",
    ),
    pytest.param(
        DefaultingCase(
            lws().spec_field("startupPolicy", c.STARTUP_POLICY_LEADER_READY),
            lambda o: o["spec"]["startupPolicy"],
            c.STARTUP_POLICY_LEADER_READY,
        ),
        id="set startupPolicy is kept",
    ),
    pytest.param(
        DefaultingCase(
            lws().spec_field("networkConfig", None),
            lambda o: o["spec"]["networkConfig"],
            {"subdomainPolicy": c.SUBDOMAIN_SHARED},
        ),
        id="nil networkConfig -> Shared",
    ),
    pytest.param(
        DefaultingCase(
            lws().spec_field("networkConfig", {}),
            lambda o: o["spec"]["networkConfig"],
            {"subdomainPolicy": c.SUBDOMAIN_SHARED},
        ),
        id="nil subdomainPolicy -> Shared",
    ),
    pytest.param(
        DefaultingCase(
            lws().spec_field("rolloutStrategy", {}),
            lambda o: o["spec"]["rolloutStrategy"],
            {"type": c.ROLLOUT_STRATEGY_ROLLING_UPDATE, "rollingUpdateConfiguration": DEFAULT_ROLLING},
        ),
        id="empty rollout strategy -> RollingUpdate with 1/0/0",
    ),
    pytest.param(
        DefaultingCase(
            lws().rolling_update(partition=2, maxUnavailable=2, maxSurge=1),
            lambda o: o["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"],
            {"partition": 2, "maxUnavailable": 2, "maxSurge": 1},
        ),
        id="configured rollout strategy is kept",
    ),
    pytest.param(
        DefaultingCase(
            lws().spec_field("rolloutStrategy", {"rollingUpdateConfiguration": {"maxSurge": "50%"}}),
            lambda o: o["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"],
            {"maxSurge": "50%"},
        ),
        id="partial configuration is left to the CRD defaults",
    ),
    pytest.param(
        DefaultingCase(
            lws().spec_field("groupIdentity", None).spec_field("groupReplacementPolicy", None),
            lambda o: (o["spec"]["groupIdentity"], o["spec"]["groupReplacementPolicy"]),
            (c.GROUP_IDENTITY_ORDINAL, c.GROUP_REPLACEMENT_POST_TERMINATION),
        ),
        id="groupIdentity -> Ordinal, groupReplacementPolicy -> PostTermination",
    ),
    pytest.param(
        DefaultingCase(
            lws().spec_field("groupIdentity", c.GROUP_IDENTITY_HASH),
            lambda o: o["spec"]["groupIdentity"],
            c.GROUP_IDENTITY_HASH,
        ),
        id="Hash identity is kept",
    ),
    pytest.param(
        DefaultingCase(
            lws().spec_field("podTerminationPolicy", ""),
            lambda o: o["spec"]["podTerminationPolicy"],
            c.POD_TERMINATION_POLICY_DEFAULT,
        ),
        id="empty podTerminationPolicy -> Default (upstream: defaulting sets Default policy)",
    ),
    pytest.param(
        DefaultingCase(
            lws().spec_field("podTerminationPolicy", c.POD_TERMINATION_POLICY_PARALLEL),
            lambda o: o["spec"]["podTerminationPolicy"],
            c.POD_TERMINATION_POLICY_PARALLEL,
        ),
        id="Parallel podTerminationPolicy is kept",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_defaulting(case: DefaultingCase) -> None:
    assert case.want(default_lws(case.given.obj())) == case.expected


@pytest.mark.parametrize("case", CASES)
def test_defaulting_is_idempotent(case: DefaultingCase) -> None:
    once = default_lws(case.given.obj())
    assert default_lws(once) == once


def test_defaulting_does_not_modify_its_input() -> None:
    given = lws().spec_field("rolloutStrategy", {}).obj()
    default_lws(given)
    assert given["spec"]["rolloutStrategy"] == {}


def test_a_fully_defaulted_object_is_unchanged() -> None:
    full = lws().obj()
    assert default_lws(full) == full
