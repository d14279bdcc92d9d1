"""Gang scheduling and the resources groups need.

* `mode` — which gang-scheduling mode `spec.scheduling` asks for;
* `gang` — decisions both scheduler providers share, and Volcano's PodGroups;
* `workloads`, `podgroups` — the Kubernetes Workload API's Workload and PodGroups;
* `podrequests` — what a pod asks the scheduler for; `accelerators` — whole devices a group needs
  and nodes have free;
* `surgefallback` — capacity-aware surge's capacity side: whether surge groups fit on the nodes.
"""
