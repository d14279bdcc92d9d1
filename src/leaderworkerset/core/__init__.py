"""Pure domain logic: functions from observed state to intended changes, no I/O and no clock.

The packages, bottom to top; each imports only from the floors below it (enforced by the
import-linter contract "core: domain packages in layers" in pyproject.toml; a package's own
docstring maps its modules):

- ``objects``, ``conditions``, ``gocompat``: plain object accessors, the one ``Obj`` alias, Hash
  identity (``is_hash``) and the ownerReferences; status conditions and the one RFC 3339 parser;
  Go-compatible encodings (JSON, revision normalisation, Quantity, IntOrString, strconv,
  apimachinery field errors).
- ``groups``, ``disaggregated``: what a group is (state, keys, names, subgroups); the
  DisaggregatedSet model and rollout planner.
- ``lifecycle``: a group's failure and recovery (restart policy, restart budget, back-off, ledger,
  in-place restart, termination).
- ``quarantine``: node quarantine (which nodes a set's new pods avoid, and why).
- ``observe``: why a group is not ready, GroupNotReady events, time to ready.
- ``rollout``: revisions, the partition arithmetic, rollout control, undo, leader replacement, and
  the in-place update and surge fallback packages.
- ``disruptionbudget``: group disruption budgets: the annotation, which groups a drain may take,
  drain-aware replacement of a Hash set.
- ``setannotations``: the table of this project's opt-in set annotations and their rules (what
  the webhook refuses and the controller flags).
- ``desired``: the objects and status the controllers should write (StatefulSets, Services,
  affinity, pod mutation, TPU variables, LWS status).
- ``scheduling``: gang scheduling (Volcano PodGroups, Workload API objects, pod requests, mode),
  accelerators, and surge fallback's capacity side.
- ``hashidentity``, ``plan``: Hash group identity (leader Deployment) and the `lws plan` preview.
"""
