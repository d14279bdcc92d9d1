"""The objects and status the controllers and the pod webhook should write.

* `statefulsets` — the leader StatefulSet and each group's worker StatefulSet;
* `services` — the headless Services that give groups their DNS names;
* `affinity` — exclusive placement and the node-affinity term of quarantined nodes;
* `podmutation` — the labels and environment variables the pod webhook injects;
* `tpu` — TPU environment variables;
* `status` — the LeaderWorkerSet status (counts, conditions);
* `statuswrite` — the status one reconcile round writes, built from the contributions of its steps.
"""
