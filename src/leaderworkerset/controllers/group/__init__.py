"""The pod (group) controller (spec §3.C): restart policies, bounded group recovery and worker
startup, one reconcile per pod. `reconciler.GroupReconciler` reads the state of a pod's group and
hands each job to a collaborator; `setup` wires it on a runtime Manager.
"""

from leaderworkerset.controllers.group.setup import setup

__all__ = ["setup"]
