"""The controllers: the I/O shell around `core` (read the caches, decide with a `core` function,
write through the API server). `setup.register_controllers` adds them to a runtime Manager.

One package per controller:

* `leaderworkerset` — the LWS controller: leader StatefulSet (or Hash identity's leader Deployment),
  revisions, the rolling update with its opt-in controls, Services, status;
* `group` — upstream's pod controller: worker StatefulSets, restart policies, bounded recovery;
* `disaggregatedset` — the DisaggregatedSet controller: child LeaderWorkerSets, the coordinated
  rollout, Services, role scalers, status;
* `disruptionbudget` — one PodDisruptionBudget per group for sets with a disruption budget.

These four import none of each other, and what they share below imports none of them (the
import-linter contracts in pyproject.toml; docs/architecture.md, "controllers/").

Feature packages and modules more than one controller uses:

* `scheduling` — gang-scheduling providers (Volcano, the Kubernetes Workload API);
* `quarantine` — node quarantine's writes, taints and metric (pod and LWS controllers);
* `surgefallback` — the node and pod LIST of capacity-aware surge (LWS and DS controllers);
* `restartbudget` — the group restart counts on the LWS (`maxGroupRestarts`) and the pod patches;
* `informers` — the caches the controllers share; `memos` — what this process wrote that the caches
  may not show yet; `generationmemo` — what only a spec change can change (revision data), once per
  generation; `wakeups` — which watch updates can change a decision; `events` — events on a
  LeaderWorkerSet;
* `setup` — registration of all of the above on a Manager (called by `lws manager`).
"""
