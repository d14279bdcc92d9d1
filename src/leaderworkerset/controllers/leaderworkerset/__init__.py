"""The LeaderWorkerSet controller: the I/O shell around `core`, one collaborator per job.

One reconcile of `<namespace>/<lws>` (`reconciler.py`, Ordinal identity):
  1. read the LWS and its leader StatefulSet from the caches (a terminating StatefulSet: wait 5 s);
  2. find or create the current ControllerRevision, and a new one when the templates changed
     (`revisions.py`);
  3. the scheduling prerequisites (`scheduling/prerequisites.py`);
  4. decide the leader StatefulSet's partition and replicas (the rolling update, with the opt-in
     rollout control) and apply it with server-side apply, field manager `lws` (`rollout.py`);
  5. ensure the shared headless Service (`children.py`);
  6. the status (counts, conditions), written once for the whole round with the events of its
     transitions (`status.py`);
  7. once a rollout is done, delete the revisions of other keys and prune settled restart counts
     (`revisions.py`, `restarts.py`).

Hash identity takes the same steps with a leader Deployment `<lws>` instead of the
StatefulSet (`hash.py`); its status is read from that Deployment (core/hashidentity.py).

The opt-in features each have their module: `inplaceupdate.py` (diff-aware in-place updates, around
step 4), `surgefallback.py` (capacity-aware surge: the round's surge mode), `inplacerestart.py` (what
the manager knows of in-place restart's prerequisites, for the sets' condition). `round.py` is one
round's state, `shell.py` what every collaborator shares, `replacement.py` leader replacement under
`MaxUnavailableStatefulSet`; `rolloutmetrics.py` and `conditionmetrics.py` the set's metric
families; `setup.py` the watches.
All decisions are `core` functions; these modules read caches, write through the API and record events.
Import the defining module (`...leaderworkerset.setup`, `...leaderworkerset.reconciler`): this
package re-exports nothing.
"""
