"""Rolling updates of an Ordinal LeaderWorkerSet's groups, and the opt-in features that steer them.

* `revision` — ControllerRevisions byte-compatible with upstream, and which one a set is on;
* `partition` — upstream's rolling-update arithmetic of the leader StatefulSet (partition, replicas,
  surge), and its simulation for `lws plan`;
* `round` — one rolling-update decision: upstream's step, then rollout control and surge fallback;
* `control` — rollout control: pause, progress deadline (docs/rollout-control.md);
* `undo` — `lws rollout undo`: the revision history and the spec an undo writes;
* `leaderreplacement` — leader replacement where StatefulSets ignore `maxUnavailable`;
* `inplaceupdate/` — diff-aware in-place updates (docs/in-place-updates.md);
* `surgefallback/` — capacity-aware surge (docs/capacity-aware-surge.md).
"""
