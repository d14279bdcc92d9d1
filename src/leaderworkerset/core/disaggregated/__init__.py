"""DisaggregatedSet domain logic.

* `naming` — the names and labels of its children; `revision` — its revision hash;
* `children` — the child LeaderWorkerSets per (role, slice, revision); `current` — which exist;
  `placement` — their placement affinity;
* `planner`, `rollout`, `rollout_inputs`, `simulation` — the coordinated rollout: the role-by-role
  planner, one slice's decision, its inputs from the children, and a whole rollout for `lws plan`;
* `services` — the private per-revision Services; `scalers` — the role scalers;
* `status` — the DisaggregatedSet status.
"""
