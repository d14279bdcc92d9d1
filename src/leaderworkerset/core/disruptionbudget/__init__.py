"""Group disruption budgets (`leaderworkerset.dev/disruption-budget`, docs/disruption-budgets.md).

* `annotation` — the annotation's one parser and rule (a row of `core/setannotations.py`'s table);
* `decision` — which groups a drain may take now, and the per-group PodDisruptionBudgets;
* `drainsurge` — drain-aware replacement of a Hash set: a group on a cordoned node is replaced
  through the rollout's surge before its budget lets the drain take it.

The package sits on the floor above `rollout` (drain surge reads the rollout's surge budget and the
set's revision) and below `setannotations`, which lists the annotation's rule; the controller is
`controllers/disruptionbudget/`.
"""
