"""The pod (group) controller: restart policies, bounded group recovery and worker
startup, one reconcile per pod. `reconciler.GroupReconciler` reads the state of a pod's group and
hands each job to a collaborator (`reconciler`); `setup` wires it on a runtime Manager.

The collaborators: `startup` (a leader's Service, PodGroup, Hash gate and worker StatefulSet),
`recovery` (the restart policy's recreations, with the restart budget and back-off), `retention`
(groups that spent their restart budget), `inplacerestart` (in-place group restart's writes),
`identity` (Hash identity's gate and group-ready condition), `cleanup` (workers that would outlive
their group), `leaders` (deleting a leader once per incarnation), `observe` (GroupNotReady events,
time to ready). `ledger` writes the failure ledger, `metrics` holds the group metric families,
`reads` and `snapshots` serve the others' cache reads.
"""

from leaderworkerset.controllers.group.setup import setup

__all__ = ["setup"]
