"""Group disruption budgets (docs/disruption-budgets.md): which groups a drain may take, and
the per-group PodDisruptionBudgets. The annotation's parser is `core/lifecycle/disruption.py`."""
