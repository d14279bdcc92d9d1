"""A group's failure and recovery, decided for the pod controller.

* `restart` — the restart policies and worker startup (upstream's pod controller);
* `restartbudget` — bounded group recovery, `maxGroupRestarts` (docs/lifecycle.md);
* `recreation` — a failed group's recreation on fresh reads: release, retain, exhaust or recreate;
* `backoff` — the opt-in restart back-off between recreations (docs/failures.md);
* `backoffsource` — which back-off applies: upstream main's `restartBackoff` field or our annotation;
* `ledger` — the per-group failure ledger: why a group was recreated (docs/failures.md);
* `inplacerestart` — in-place group restart (docs/in-place-restart.md);
* `termination` — `podTerminationPolicy`: which worker StatefulSet goes with its leader.
"""
