"""The group disruption-budget controller (docs/disruption-budgets.md)."""

from leaderworkerset.controllers.disruptionbudget.setup import setup

__all__ = ["setup"]
