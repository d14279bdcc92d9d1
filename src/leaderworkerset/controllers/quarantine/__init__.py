"""Node quarantine's I/O (docs/node-quarantine.md; the decisions are `core/quarantine/`), shared by the
pod controller (a failure may quarantine a node) and the LWS controller (a cool-down ends):

* `writes` — `NodeQuarantine`: the LWS's `leaderworkerset.dev/quarantined-nodes` annotation, its
  events and its metric;
* `taints` — taint mode's node reads and patches (`NodeTaints`);
* `metrics` — `lws_quarantined_nodes{namespace,lws}`.

The pod webhook's side (keeping a set's new pods off its quarantined nodes) is `webhooks/quarantine.py`.
"""
