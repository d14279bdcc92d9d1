"""The manager's RBAC: one table of rules, each with the reason it exists.

The rules are derived from the API calls the controllers, webhooks and runtime make (every
``client.<verb>(REF, ...)`` and every informer), not copied from upstream: what is only read from a
watch-fed cache gets list/watch, what is written gets exactly the write verbs used. Where upstream
grants more (cluster-wide Secrets, pod/node update, ConfigMaps for the old leader-election lock), we
do not. Namespaced needs (the Lease, the webhook Secret) live in a Role in the install namespace, not
in the ClusterRole.

``tests/unit/install/test_rbac.py`` walks the source for client calls and informers and fails when one
is not granted here, so a new call cannot ship without its rule; docs/install.md prints the table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from leaderworkerset.api import constants as c
from leaderworkerset.api.installation import (
    LEADER_ELECTION_ROLE_BINDING_NAME,
    LEADER_ELECTION_ROLE_NAME,
    MANAGER_ROLE_BINDING_NAME,
    MANAGER_ROLE_NAME,
    METRICS_AUTH_ROLE_BINDING_NAME,
    METRICS_AUTH_ROLE_NAME,
    METRICS_READER_ROLE_NAME,
    SERVICE_ACCOUNT_NAME,
)
from leaderworkerset.core.objects import MutableObj

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"


class Scope(Enum):
    CLUSTER = "ClusterRole lws-manager-role"
    NAMESPACE = "Role lws-leader-election-role (install namespace)"
    METRICS = "ClusterRole lws-metrics-auth-role"


class Feature(Enum):
    """Which part of the product needs a rule; optional parts add rules only when switched on."""

    CORE = "core"
    DISAGGREGATED_SET = "disaggregatedset"
    VOLCANO = "volcano"
    WORKLOAD_API = "workload-api"
    QUARANTINE_TAINTS = "quarantine-taints"


@dataclass(frozen=True)
class Rule:
    api_group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    reason: str
    scope: Scope = Scope.CLUSTER
    feature: Feature = Feature.CORE
    resource_names: tuple[str, ...] = ()

    def grants(self, api_group: str, resource: str, verb: str, name: str | None = None) -> bool:
        if api_group != self.api_group or resource not in self.resources or verb not in self.verbs:
            return False
        return not self.resource_names or name in self.resource_names

    def render(self) -> MutableObj:
        rule: MutableObj = {"apiGroups": [self.api_group], "resources": list(self.resources)}
        if self.resource_names:
            rule["resourceNames"] = list(self.resource_names)
        rule["verbs"] = list(self.verbs)
        return rule


LWS, DS, APPS, CORE = c.LWS_GROUP, c.DS_GROUP, "apps", ""
_OWNER_FINALIZERS = (
    "children carry a controller ownerReference with blockOwnerDeletion=true; with the "
    "OwnerReferencesPermissionEnforcement admission plugin that needs update on the owner's finalizers"
)


def rules(*, leader_election_id: str = c.DEFAULT_LEADER_ELECTION_ID) -> tuple[Rule, ...]:
    """Every rule the manager may need; ``for_features`` picks the ones an install grants."""
    webhook_configurations = (c.MUTATING_WEBHOOK_CONFIGURATION_NAME, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME)
    return (
        # --- LeaderWorkerSet controller -------------------------------------------------------
        Rule(
            LWS,
            (c.LWS_PLURAL,),
            ("list", "watch"),
            "LWS controller: informer of every LeaderWorkerSet",
        ),
        Rule(
            LWS,
            (f"{c.LWS_PLURAL}/status",),
            ("update",),
            "LWS controller: writes replicas, hpaPodSelector, conditions",
        ),
        Rule(LWS, (f"{c.LWS_PLURAL}/finalizers",), ("update",), f"LWS controller: {_OWNER_FINALIZERS}"),
        Rule(
            LWS,
            (c.LWS_PLURAL,),
            ("get", "update"),
            "pod controller: maxGroupRestarts counts, read fresh and written with optimistic concurrency",
        ),
        Rule(
            APPS,
            ("deployments",),
            ("list", "watch", "create", "patch"),
            "LWS controller: the leader Deployment of groupIdentity Hash (informer, server-side apply: "
            "`create` for the apply that makes it)",
        ),
        Rule(
            APPS,
            ("statefulsets",),
            ("list", "watch"),
            "both controllers: informer of leader and worker StatefulSets (label-filtered)",
        ),
        Rule(
            APPS,
            ("statefulsets",),
            ("create", "patch"),
            "LWS controller applies the leader StatefulSet; pod controller creates worker StatefulSets",
        ),
        Rule(
            APPS,
            ("statefulsets",),
            ("delete",),
            "podTerminationPolicy Parallel: workers deleted with their terminating leader or LWS",
        ),
        Rule(
            APPS,
            ("statefulsets",),
            ("get",),
            "pod controller: a fresh read before deleting a worker pod whose worker StatefulSet looks "
            "gone or replaced in the cache (the garbage collector missed it)",
        ),
        Rule(
            APPS,
            ("controllerrevisions",),
            ("list", "watch"),
            "LWS controller: informer of its ControllerRevisions (revision history; label-filtered, not the"
            " StatefulSet controller's own, which carry controller.kubernetes.io/hash)",
        ),
        Rule(
            APPS,
            ("controllerrevisions",),
            ("create", "delete", "get"),
            "LWS controller: records a revision per template change, deletes stale ones, reads back one "
            "whose create lost its answer",
        ),
        Rule(
            CORE,
            ("services",),
            ("list", "watch"),
            "both controllers: informer of the headless Services (label-filtered)",
        ),
        Rule(
            CORE,
            ("services",),
            ("create",),
            "headless Service per LWS (Shared) or per group (UniquePerReplica)",
        ),
        # --- pod controller ---------------------------------------------------------------------
        Rule(
            CORE,
            ("pods",),
            ("get", "list", "watch"),
            "pod controller: informer of LWS pods; a live read of a leader before acting on stale cache",
        ),
        Rule(
            CORE,
            ("pods",),
            ("delete",),
            "pod controller: recreates a group by deleting its leader (RecreateGroupOnPodRestart)",
        ),
        Rule(
            CORE,
            ("pods",),
            ("patch",),
            "pod controller: restart-budget finalizers and markers; lifts the group-replacement gate; "
            "LWS controller: in-place updates (images, metadata, revision labels)",
        ),
        Rule(
            CORE,
            ("pods/resize",),
            ("patch",),
            "LWS controller: in-place updates resize CPU and memory of running pods (update-strategy)",
        ),
        Rule(
            CORE,
            ("pods/status",),
            ("patch",),
            "pod controller: the group-ready condition of Hash leaders",
        ),
        Rule(
            CORE,
            ("pods/finalizers",),
            ("update",),
            f"pod controller: worker StatefulSets are owned by the leader pod; {_OWNER_FINALIZERS}",
        ),
        Rule(
            CORE,
            ("nodes",),
            ("get",),
            "pod controller: reads the leader's node for exclusive topology placement and TPU env",
        ),
        Rule(
            CORE,
            ("nodes",),
            ("list",),
            "pod controller: counts the nodes a set could use before quarantining one (opt-in "
            "leaderworkerset.dev/quarantine-after; at most a share of them is quarantined); LWS and DS "
            "controllers: free accelerators per node while a set's surge is given back "
            "(surge-fallback-seconds), to know when it may surge again",
        ),
        Rule(
            CORE,
            ("nodes",),
            ("list", "watch"),
            "disruption-budget controller: informer of cordoned nodes only (field selector "
            "spec.unschedulable=true): a group with a pod there wants its budget released for the drain",
        ),
        Rule(
            "policy",
            ("poddisruptionbudgets",),
            ("list", "watch", "create", "patch", "delete"),
            "disruption-budget controller: the per-group PodDisruptionBudgets of a set annotated "
            "leaderworkerset.dev/disruption-budget (label-filtered informer, server-side apply, delete "
            "when the annotation goes or a group leaves); `create` because a server-side apply that "
            "makes the object is authorized as a create",
        ),
        Rule(
            CORE,
            ("configmaps",),
            ("get", "create", "update"),
            "pod controller: the per-LWS failure ledger and restart back-off state (<lws>-failure-ledger), "
            "read fresh and written with optimistic concurrency on a group recreation",
        ),
        Rule(
            CORE,
            ("events",),
            ("list",),
            "pod controller: a failed container's Unhealthy events, read once per recreation to tell a "
            "probe kill from a crash",
        ),
        # --- shared runtime ---------------------------------------------------------------------
        Rule(
            "events.k8s.io",
            ("events",),
            ("create", "patch"),
            "event recorder: events on LWS/DS/pods in their namespaces; patch bumps an event series",
        ),
        # --- DisaggregatedSet controller (built in parallel; upstream always installs it) -----------
        Rule(
            DS,
            (c.DS_PLURAL,),
            ("get", "list", "watch", "update", "patch"),
            "DS controller: informer of DisaggregatedSets; adds/removes its finalizer",
            feature=Feature.DISAGGREGATED_SET,
        ),
        Rule(
            DS,
            (f"{c.DS_PLURAL}/status",),
            ("update", "patch"),
            "DS controller: writes per-role status and conditions",
            feature=Feature.DISAGGREGATED_SET,
        ),
        Rule(
            DS,
            (f"{c.DS_PLURAL}/finalizers",),
            ("update",),
            f"DS controller: role LWSs and scalers are owned by the DS; {_OWNER_FINALIZERS}",
            feature=Feature.DISAGGREGATED_SET,
        ),
        Rule(
            DS,
            (c.DSRS_PLURAL,),
            ("get", "list", "watch", "create", "update", "patch", "delete"),
            "DS controller: one DisaggregatedSetRoleScaler per externally scaled role",
            feature=Feature.DISAGGREGATED_SET,
        ),
        Rule(
            DS,
            (f"{c.DSRS_PLURAL}/status",),
            ("update", "patch"),
            "DS controller: writes the scaler's observed replicas and selector",
            feature=Feature.DISAGGREGATED_SET,
        ),
        Rule(
            LWS,
            (c.LWS_PLURAL,),
            ("get", "create", "patch", "delete"),
            "DS controller: one LeaderWorkerSet per role, slice and revision, scaled (merge patch) "
            "and deleted during its rollout; a get checks who owns a name that is already taken",
            feature=Feature.DISAGGREGATED_SET,
        ),
        Rule(
            CORE,
            ("services",),
            ("get", "patch", "delete"),
            "DS controller: a get checks who owns a taken -prv name; patch hands an older controller's "
            "DS-owned Service to its LWS; delete removes such a Service whose LWS is gone",
            feature=Feature.DISAGGREGATED_SET,
        ),
        # --- node quarantine, taint mode (opt-in install value: the default grants no node write) ----
        Rule(
            CORE,
            ("nodes",),
            ("patch",),
            "LWS controller, only for a set annotated leaderworkerset.dev/quarantine-mode: Taint: adds "
            "and removes its own NoSchedule taint on the nodes the set quarantines (JSON patch of "
            "spec.taints, no other field, never another taint)",
            feature=Feature.QUARANTINE_TAINTS,
        ),
        # --- gang scheduling ----------------------------------------------------------------------
        Rule(
            "scheduling.volcano.sh",
            ("podgroups",),
            ("get", "list", "watch", "create"),
            "pod controller with schedulerProvider volcano: a PodGroup per group (as upstream's component)",
            feature=Feature.VOLCANO,
        ),
        Rule(
            "scheduling.k8s.io",
            ("workloads",),
            ("get", "list", "watch", "create", "update"),
            "schedulerProvider kubernetes: one Workload per LeaderWorkerSet, kept in sync",
            feature=Feature.WORKLOAD_API,
        ),
        Rule(
            "scheduling.k8s.io",
            ("podgroups",),
            ("get", "list", "watch", "create", "update", "delete"),
            "schedulerProvider kubernetes: PodGroups per level, updated on drift, deleted when unused",
            feature=Feature.WORKLOAD_API,
        ),
        # --- webhooks: internal certificate management ------------------------------------------
        Rule(
            "admissionregistration.k8s.io",
            ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"),
            ("get", "list", "watch", "update"),
            "certificate rotator injects the CA bundle into our two webhook configurations (and no other), "
            "and watches them to put back a bundle that an apply reset",
            resource_names=webhook_configurations,
        ),
        Rule(
            CORE,
            ("secrets",),
            ("get", "list", "watch", "update"),
            "certificate rotator keeps the CA and serving pair in this one Secret, and watches it "
            "(deleting it forces a rotation)",
            scope=Scope.NAMESPACE,
            resource_names=(c.DEFAULT_WEBHOOK_SECRET_NAME,),
        ),
        Rule(
            CORE,
            ("secrets",),
            ("create",),
            "certificate rotator recreates the Secret when it was deleted (create cannot be limited by name)",
            scope=Scope.NAMESPACE,
        ),
        # --- leader election --------------------------------------------------------------------
        Rule(
            "coordination.k8s.io",
            ("leases",),
            ("get", "update"),
            "leader election: reads and renews the Lease",
            scope=Scope.NAMESPACE,
            resource_names=(leader_election_id,),
        ),
        Rule(
            "coordination.k8s.io",
            ("leases",),
            ("create",),
            "leader election: creates the Lease on first start",
            scope=Scope.NAMESPACE,
        ),
        # --- metrics endpoint -------------------------------------------------------------------
        Rule(
            "authentication.k8s.io",
            ("tokenreviews",),
            ("create",),
            "metrics server authenticates scrapers' bearer tokens",
            scope=Scope.METRICS,
        ),
        Rule(
            "authorization.k8s.io",
            ("subjectaccessreviews",),
            ("create",),
            "metrics server authorizes `get /metrics` for the scraper",
            scope=Scope.METRICS,
        ),
    )


def for_features(all_rules: Iterable[Rule], features: Iterable[Feature]) -> tuple[Rule, ...]:
    wanted = {Feature.CORE, *features}
    return tuple(rule for rule in all_rules if rule.feature in wanted)


def _meta(name: str, labels: dict[str, str], namespace: str | None = None) -> MutableObj:
    meta: MutableObj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = dict(labels)
    return meta


def _subjects(namespace: str) -> list[MutableObj]:
    return [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT_NAME, "namespace": namespace}]


def render(granted: Iterable[Rule], namespace: str, labels: dict[str, str]) -> list[MutableObj]:
    """ClusterRoles, the namespaced Role, and their bindings to the manager's ServiceAccount."""
    by_scope = {scope: [r.render() for r in granted if r.scope is scope] for scope in Scope}
    return [
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRole",
            "metadata": _meta(MANAGER_ROLE_NAME, labels),
            "rules": by_scope[Scope.CLUSTER],
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRoleBinding",
            "metadata": _meta(MANAGER_ROLE_BINDING_NAME, labels),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": MANAGER_ROLE_NAME,
            },
            "subjects": _subjects(namespace),
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": _meta(LEADER_ELECTION_ROLE_NAME, labels, namespace),
            "rules": by_scope[Scope.NAMESPACE],
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "RoleBinding",
            "metadata": _meta(LEADER_ELECTION_ROLE_BINDING_NAME, labels, namespace),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": LEADER_ELECTION_ROLE_NAME,
            },
            "subjects": _subjects(namespace),
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRole",
            "metadata": _meta(METRICS_AUTH_ROLE_NAME, labels),
            "rules": by_scope[Scope.METRICS],
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRoleBinding",
            "metadata": _meta(METRICS_AUTH_ROLE_BINDING_NAME, labels),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": METRICS_AUTH_ROLE_NAME,
            },
            "subjects": _subjects(namespace),
        },
        {
            # For the scraper (Prometheus), not for the manager: bind it to whoever reads /metrics.
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRole",
            "metadata": _meta(METRICS_READER_ROLE_NAME, labels),
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    ]


_ROLE_OF_SCOPE = {
    Scope.CLUSTER: f"ClusterRole `{MANAGER_ROLE_NAME}`",
    Scope.NAMESPACE: f"Role `{LEADER_ELECTION_ROLE_NAME}`",
    Scope.METRICS: f"ClusterRole `{METRICS_AUTH_ROLE_NAME}`",
}


def markdown_table(all_rules: Iterable[Rule]) -> str:
    """Every rule with its reason, as docs/install.md shows it (a unit test keeps the two equal)."""
    lines = [
        "| role | part | apiGroup | resources | resourceNames | verbs | why |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in all_rules:
        lines.append(
            f"| {_ROLE_OF_SCOPE[r.scope]} | {r.feature.value} | `{r.api_group or 'core'}` "
            f"| {', '.join(r.resources)} | {', '.join(r.resource_names) or '—'} | {', '.join(r.verbs)} "
            f"| {r.reason} |"
        )
    return "\n".join(lines) + "\n"
