"""The constants agree with upstream's own manifests (CRDs and webhook configuration)."""

import functools
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from tests.support import upstream


@functools.cache
def _crd(name: str) -> dict[str, Any]:
    """Upstream's CRD file ``name``, read inside the test so that absent data fails or skips it."""
    doc: dict[str, Any] = yaml.safe_load(upstream.require("crds", name).read_text())
    return doc


# The parameters name upstream's CRD files; each test loads its file through `_crd`.
LWS_CRD = "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
DS_CRD = "disaggregatedset.x-k8s.io_disaggregatedsets.yaml"
DSRS_CRD = "disaggregatedset.x-k8s.io_disaggregatedsetrolescalers.yaml"


@pytest.mark.parametrize(
    ("crd_file", "want_group", "want_names"),
    [
        pytest.param(
            LWS_CRD,
            c.LWS_GROUP,
            {
                "kind": c.LWS_KIND,
                "listKind": c.LWS_LIST_KIND,
                "plural": c.LWS_PLURAL,
                "singular": c.LWS_SINGULAR,
                "shortNames": [c.LWS_SHORT_NAME],
            },
            id="LeaderWorkerSet",
        ),
        pytest.param(
            DS_CRD,
            c.DS_GROUP,
            {"kind": c.DS_KIND, "listKind": c.DS_LIST_KIND, "plural": c.DS_PLURAL, "singular": c.DS_SINGULAR},
            id="DisaggregatedSet",
        ),
        pytest.param(
            DSRS_CRD,
            c.DS_GROUP,
            {
                "kind": c.DSRS_KIND,
                "listKind": c.DSRS_LIST_KIND,
                "plural": c.DSRS_PLURAL,
                "singular": c.DSRS_SINGULAR,
                "shortNames": [c.DSRS_SHORT_NAME],
            },
            id="DisaggregatedSetRoleScaler",
        ),
    ],
)
def test_group_and_names_match_upstream_crds(
    crd_file: str, want_group: str, want_names: dict[str, Any]
) -> None:
    crd = _crd(crd_file)
    assert crd["spec"]["group"] == want_group
    assert crd["spec"]["names"] == want_names
    assert [v["name"] for v in crd["spec"]["versions"]] == [c.LWS_VERSION]


def _prop(crd: dict[str, Any], *path: str) -> dict[str, Any]:
    node: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for step in path:
        node = node["items"] if step == "[]" else node["properties"][step]
    return node


LWT = ("spec", "leaderWorkerTemplate")


@pytest.mark.parametrize(
    ("crd_file", "path", "want_enum", "want_default"),
    [
        pytest.param(
            LWS_CRD,
            (*LWT, "restartPolicy"),
            c.RESTART_POLICIES,
            c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART,
            id="restartPolicy",
        ),
        pytest.param(
            LWS_CRD,
            ("spec", "startupPolicy"),
            c.STARTUP_POLICIES,
            c.STARTUP_POLICY_LEADER_CREATED,
            id="startupPolicy",
        ),
        pytest.param(
            LWS_CRD,
            (*LWT, "subGroupPolicy", "subGroupPolicyType"),
            c.SUBGROUP_POLICY_TYPES,
            c.SUBGROUP_POLICY_LEADER_WORKER,
            id="subGroupPolicyType",
        ),
        pytest.param(
            LWS_CRD,
            ("spec", "networkConfig", "subdomainPolicy"),
            c.SUBDOMAIN_POLICIES,
            None,
            id="subdomainPolicy",
        ),
        pytest.param(
            LWS_CRD,
            ("spec", "rolloutStrategy", "type"),
            c.ROLLOUT_STRATEGY_TYPES,
            c.ROLLOUT_STRATEGY_ROLLING_UPDATE,
            id="rolloutStrategy.type",
        ),
        pytest.param(
            DS_CRD,
            ("spec", "roles", "[]", "scaling", "mode"),
            c.ROLE_SCALING_MODES,
            c.ROLE_SCALING_STATIC,
            id="roles[].scaling.mode",
        ),
        pytest.param(
            DS_CRD,
            ("spec", "placementPolicy", "type"),
            c.PLACEMENT_TYPES,
            c.PLACEMENT_NONE,
            id="placementPolicy.type",
        ),
    ],
)
def test_enum_values_match_upstream_crds(
    crd_file: str, path: tuple[str, ...], want_enum: tuple[str, ...], want_default: str | None
) -> None:
    node = _prop(_crd(crd_file), *path)
    assert tuple(node["enum"]) == want_enum
    assert node.get("default") == want_default


def _webhooks() -> dict[str, str]:
    docs = yaml.safe_load_all(upstream.require("config", "webhook-manifests.yaml").read_text())
    return {w["name"]: w["clientConfig"]["service"]["path"] for d in docs if d for w in d["webhooks"]}


@pytest.mark.parametrize(
    ("name", "path"),
    [
        pytest.param(c.WEBHOOK_NAME_MUTATE_LWS, c.WEBHOOK_PATH_MUTATE_LWS, id="mutate lws"),
        pytest.param(c.WEBHOOK_NAME_VALIDATE_LWS, c.WEBHOOK_PATH_VALIDATE_LWS, id="validate lws"),
        pytest.param(c.WEBHOOK_NAME_MUTATE_POD, c.WEBHOOK_PATH_MUTATE_POD, id="mutate pod"),
        pytest.param(c.WEBHOOK_NAME_VALIDATE_POD, c.WEBHOOK_PATH_VALIDATE_POD, id="validate pod"),
        pytest.param(c.WEBHOOK_NAME_VALIDATE_DS, c.WEBHOOK_PATH_VALIDATE_DS, id="validate ds"),
    ],
)
def test_webhook_names_and_paths_match_upstream(name: str, path: str) -> None:
    assert _webhooks()[name] == path


def test_label_and_annotation_keys_are_distinct() -> None:
    keys = [v for k, v in vars(c).items() if k.startswith(("LABEL_", "ANNOTATION_")) and isinstance(v, str)]
    assert len(keys) == len(set(keys))
