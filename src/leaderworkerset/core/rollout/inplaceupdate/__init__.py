"""Diff-aware in-place updates of an Ordinal LWS's groups (`leaderworkerset.dev/update-strategy:
InPlaceIfPossible`, docs/in-place-updates.md).

How a group moves to the new revision without a pod being recreated, in the StatefulSet
controller's own terms:

* while any group still waits for its in-place update the leader StatefulSet's partition is held at
  its replicas (`holds_partition`), so the StatefulSet controller replaces no leader;
* a group's worker StatefulSet gets the new template with its partition held at its replicas; once
  its controller published the new `updateRevision`, each worker pod is patched (images, template
  metadata) and labelled with that revision, and the partition drops to 0: every pod already is at
  the update revision, nothing is recreated;
* the leader pod is patched last, with the leader StatefulSet's `updateRevision`: its revision
  label marks the group done, so a manager killed halfway resumes the started group and never
  starts a finished one again;
* a group counts unavailable from its first patch until every container runs its new image and is
  Ready (`pod_settled`); at most max(maxUnavailable, 1) groups are unavailable at a time.

Once no group waits, the normal rollout decision takes over and finds every group updated: the
partition drops to 0 and the StatefulSets report the update revision as current, which is what
upstream's controller sees after a swap.

The modules, all pure (the controller, `controllers/leaderworkerset/inplaceupdate.py`, reads and writes):

* `classification` — which template changes reach running pods without recreating them, and why;
* `planning` — the annotation's rule, each group's progress, which groups move this round and whether
  the leader StatefulSet's partition is held;
* `decision` — one round: the snapshot the controller gathers in, the whole plan out (hold, keep,
  settle, advance), and each moved group's writes in order;
* `patches` — what an update writes: the pod, resize and worker-template patches, and when a pod has
  settled on its new images.
"""
