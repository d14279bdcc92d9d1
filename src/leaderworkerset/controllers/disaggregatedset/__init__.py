"""The DisaggregatedSet controller: child LWS per (role, slice, revision), the
coordinated rollout executor, private Services, role scalers and status.

Modules: `reconciler` (one round), `children` (the child LeaderWorkerSets), `executor` (one rollout
step of a slice), `services` (private Services), `scalers` (role scalers), `surgefallback`
(capacity-aware surge's inputs and state), `informers` (the caches of its own), `setup` (wiring).

API calls it makes, i.e. the RBAC it needs (as upstream's kubebuilder markers):
  * disaggregatedsets: get, list, watch; disaggregatedsets/status: update;
  * disaggregatedsetrolescalers: get, list, watch, create, delete; .../status: patch;
  * leaderworkersets: get, list, watch, create, patch, delete (Foreground, UID precondition);
  * services: get, list, watch, create, patch (ownership hand-over), delete (legacy orphans);
  * events.k8s.io events: create, patch.
"""

from leaderworkerset.controllers.disaggregatedset.setup import setup

__all__ = ["setup"]
