"""Capacity-aware surge (`leaderworkerset.dev/surge-fallback-seconds`, docs/capacity-aware-surge.md):
a surge that cannot be scheduled is given back, and groups are replaced one at a time without surge
until the accelerators are free again.

* `decision` — the decision, for an Ordinal LWS and in the terms any set's signals are read into:
  when to give the surge back and when to surge again, the rollout step without surge, the
  `SurgeFallback` condition and its events;
* `disaggregated` — a DisaggregatedSet's signals, read from its rollout by role.

Whether a surge group fits on the nodes (the capacity side, shared with `lws plan`) is
`core/scheduling/surgefallback.py`: it needs the scheduling floor's accelerator arithmetic, which
sits above `rollout` (the rollout round and the status writer below it call the decision here).
The controllers are `controllers/leaderworkerset/surgefallback.py` and
`controllers/disaggregatedset/surgefallback.py`, which share the node and pod LIST of
`controllers/surgefallback.py`.
"""
