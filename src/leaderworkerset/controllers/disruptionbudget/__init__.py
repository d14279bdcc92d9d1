"""The group disruption-budget controller (docs/disruption-budgets.md; the decision is
`core/disruptionbudget/`): `reconciler` (one round of a set's per-group PodDisruptionBudgets and
drain-surge marks), `setup` (its caches and watches)."""

from leaderworkerset.controllers.disruptionbudget.setup import setup

__all__ = ["setup"]
