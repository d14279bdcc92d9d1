"""The manager's RBAC is exactly what its code calls: every call is granted, every grant is called.

The source of the controllers, webhooks and runtime is parsed (no cluster); each
``<client>.<verb>(REF, ...)`` and ``cache.informer(REF, ...)`` whose REF resolves to a
``ResourceRef`` becomes a needed (group, resource, verb). Sufficiency: every needed triple is granted
by the install's rules. Minimality: every verb of every granted core rule is needed by some call,
except the few rules whose need is not a call (listed with their reason). The e2e test
``tests/e2e/test_install_rbac.py`` then runs the manager under the ServiceAccount.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path

import pytest

import leaderworkerset
from leaderworkerset.install import rbac
from leaderworkerset.install.manifests import InstallOptions, granted_features
from leaderworkerset.runtime.resources import ResourceRef
from leaderworkerset.webhooks import certs

SRC = Path(leaderworkerset.__file__).parent
SCANNED = ("controllers", "runtime", "webhooks")
# Client method -> RBAC verb. `apply` is a server-side apply PATCH.
# The verbs a client method needs. A server-side apply is authorized as a patch, and as a create when
# the object does not exist yet (the API server's apply handler): a rule granting only `patch` lets
# the controller update its objects but never make the first one (found on real nodes, where the chart's
# RBAC refused the first group budget of a set).
VERBS: dict[str, tuple[str, ...]] = {
    "get": ("get",),
    "get_or_none": ("get",),
    "list": ("list",),
    "create": ("create",),
    "_create": ("create",),
    "update": ("update",),
    "apply": ("patch", "create"),
    "patch": ("patch",),
    "merge_patch": ("patch",),
    "json_patch": ("patch",),
    "delete": ("delete",),
    "delete_incarnation": ("delete",),
    "apply_status": ("patch",),
    "patch_status": ("patch",),
}
# Calls whose ref is a variable: what it can be, by (file, variable).
INDIRECT: dict[tuple[str, str], tuple[ResourceRef, ...]] = {
    ("webhooks/certs.py", "ref"): (certs.MUTATING_CONFIGURATIONS, certs.VALIDATING_CONFIGURATIONS),
    # The rotator watches its Secret and both webhook configurations, one informer each.
    ("webhooks/certs.py", "watched_ref"): (
        certs.SECRETS,
        certs.MUTATING_CONFIGURATIONS,
        certs.VALIDATING_CONFIGURATIONS,
    ),
    # KubeAuthorizer's create callback; metricsserver.py names its two review kinds itself.
    ("runtime/manager.py", "ref"): (),
    # Delegation reads the parent object that owns the LWS (any kind, e.g. a JobSet): whoever makes an
    # LWS part of a parent's Workload grants that kind; the install cannot know it.
    ("controllers/scheduling/kubernetes.py", "ref"): (),
}
# Calls that never run in a cluster install, with the reason.
NOT_IN_CLUSTER = {
    ("webhooks/runner.py", "refs"): "dev URL mode (--webhook-url-host) applies its own URL configurations",
}
# Granted (group, resource, verb) whose need is not an API call, with the reason.
NOT_CALL_DERIVED = {
    (
        "leaderworkerset.x-k8s.io",
        "leaderworkersets/finalizers",
        "update",
    ): "OwnerReferencesPermissionEnforcement",
    ("", "pods/finalizers", "update"): "OwnerReferencesPermissionEnforcement",
}


@dataclass(frozen=True)
class Need:
    group: str
    resource: str
    verb: str
    where: str


# What an API call looks like in our code: a method of the client, or the cache's informer.
CLIENTS = {"client", "self._client", "self.client", "mgr.client"}
CACHES = {"cache", "mgr.cache", "self.cache", "self._cache"}


def _is_api_call(receiver: str, method: str) -> bool:
    if method == "informer":
        return receiver in CACHES
    if method == "_create":
        return receiver == "self"
    return method in VERBS and receiver in CLIENTS


def _resolve(module: object, node: ast.expr) -> ResourceRef | None:
    value: object = None
    if isinstance(node, ast.Name):
        value = getattr(module, node.id, None)
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        value = getattr(getattr(module, node.value.id, None), node.attr, None)
    return value if isinstance(value, ResourceRef) else None


def _subresource(call: ast.Call) -> str | None:
    candidates = [*call.args[2:3], *(kw.value for kw in call.keywords if kw.arg == "subresource")]
    for node in candidates:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
    return None


def scan() -> tuple[list[Need], list[str]]:
    needs: list[Need] = []
    unresolved: list[str] = []
    for layer in SCANNED:
        for path in sorted((SRC / layer).rglob("*.py")):
            rel = str(path.relative_to(SRC))
            module = importlib.import_module(
                "leaderworkerset." + rel[:-3].replace("/", ".").removesuffix(".__init__")
            )
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
                    continue
                method = node.func.attr
                receiver = ast.unparse(node.func.value)
                if not _is_api_call(receiver, method):
                    continue
                where = f"{rel}:{node.lineno}"
                ref = _resolve(module, node.args[0])
                refs: tuple[ResourceRef, ...]
                if ref is not None:
                    refs = (ref,)
                else:
                    arg = node.args[0]
                    var = (
                        arg.id
                        if isinstance(arg, ast.Name)
                        else getattr(getattr(arg, "value", None), "id", "")
                    )
                    if (rel, var) in NOT_IN_CLUSTER:
                        continue
                    if (rel, var) not in INDIRECT:
                        unresolved.append(f"{where} {method}({ast.unparse(arg)})")
                        continue
                    refs = INDIRECT[(rel, var)]
                for r in refs:
                    if method == "informer":
                        needs += [Need(r.group, r.plural, v, where) for v in ("list", "watch")]
                        continue
                    sub = "status" if method in ("apply_status", "patch_status") else _subresource(node)
                    resource = f"{r.plural}/{sub}" if sub else r.plural
                    needs += [Need(r.group, resource, verb, where) for verb in VERBS[method]]
    return needs, unresolved


NEEDS, UNRESOLVED = scan()
# Every call must be granted by the install that switches its part on (gang-scheduling rules come with
# their provider), so the check is against the rules of every feature.
GRANTED = rbac.for_features(rbac.rules(), tuple(rbac.Feature))


def _granted(group: str, resource: str, verb: str) -> bool:
    return any(
        rule.api_group == group and resource in rule.resources and verb in rule.verbs for rule in GRANTED
    )


def test_the_scan_finds_the_calls_it_must() -> None:
    found = {(n.group, n.resource, n.verb) for n in NEEDS}
    # A positive sign the scanner works: calls we know exist are found.
    assert ("apps", "controllerrevisions", "create") in found
    assert ("leaderworkerset.x-k8s.io", "leaderworkersets/status", "update") in found
    assert ("coordination.k8s.io", "leases", "update") in found
    assert ("", "pods", "watch") in found
    assert ("authentication.k8s.io", "tokenreviews", "create") in found
    assert len(found) >= 20


def test_every_call_resolves_to_a_resource() -> None:
    assert UNRESOLVED == [], "add the variable to INDIRECT or NOT_IN_CLUSTER with a reason"


@pytest.mark.parametrize(
    # A total order: xdist workers must collect the same list, and set order varies per process.
    "need",
    sorted(set(NEEDS), key=lambda n: (n.where, n.verb, n.group, n.resource)),
    ids=lambda n: f"{n.verb} {n.resource} {n.where}",
)
def test_every_call_is_granted(need: Need) -> None:
    assert _granted(need.group, need.resource, need.verb), f"no rule grants {need}"


def _core_grants() -> list[tuple[str, str, str]]:
    return [
        (rule.api_group, resource, verb)
        for rule in GRANTED
        if rule.feature is rbac.Feature.CORE
        for resource in rule.resources
        for verb in rule.verbs
    ]


@pytest.mark.parametrize("grant", _core_grants(), ids=lambda g: f"{g[2]} {g[0] or 'core'}/{g[1]}")
def test_every_core_grant_is_needed(grant: tuple[str, str, str]) -> None:
    needed = {(n.group, n.resource, n.verb) for n in NEEDS}
    assert grant in needed or grant in NOT_CALL_DERIVED, f"{grant} is granted but nothing calls it"


def test_optional_features_add_rules_only_when_on() -> None:
    plain = rbac.for_features(rbac.rules(), ())
    volcano = rbac.for_features(
        rbac.rules(), granted_features(InstallOptions(gang_scheduler_provider="volcano"))
    )
    assert not any("podgroups" in r.resources for r in plain)
    assert not any(c.api_group == rbac.DS for c in plain)
    assert any("podgroups" in r.resources for r in volcano)
    # Node quarantine's taint mode: node patch only when the install opts in, never by default.
    taints = rbac.for_features(rbac.rules(), (rbac.Feature.QUARANTINE_TAINTS,))
    assert not any("nodes" in r.resources and "patch" in r.verbs for r in plain)
    assert any("nodes" in r.resources and "patch" in r.verbs for r in taints)
    assert granted_features(InstallOptions()) == (rbac.Feature.DISAGGREGATED_SET,)


def test_every_rule_says_why() -> None:
    assert all(len(rule.reason) > 20 for rule in rbac.rules())
