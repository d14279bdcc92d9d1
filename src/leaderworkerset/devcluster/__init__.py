"""A local Kubernetes control plane of real components built from Go modules, without Docker
(docs/devcluster.md).

* ``cluster`` — ``LocalCluster``, its two shapes (``apiserver``, ``full``); ``named`` — the
  long-lived clusters of ``lws cluster up/down``;
* ``versions`` — the pinned versions and the cache key; ``build`` — the control plane built into
  that cache; ``tools`` — the extra Go tools the tests use (helm, upstream's manager, ...);
* ``components`` — the components' command lines (pure); ``pki`` — their certificates;
  ``processes`` — start and stop them without orphans; ``supervisor`` — restart the ones that exit;
* ``kube`` — a small synchronous REST client for the cluster's own needs; ``nodes`` — kwok's fake
  nodes; ``reaper`` — the kubelet's part that confirms a pod's deletion; ``chaos`` — simulated
  kubelet events; ``metrics`` — metrics-server; ``progress`` — long steps shown with their time;
* ``realnodes`` — real kubelets with containerd, each node a network namespace (docs/real-nodes.md).
"""
