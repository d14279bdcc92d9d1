"""`lws plan`: the steps a spec change takes, built from the controllers' own pure functions.

Nothing here re-derives a rollout. Whether a change rolls out is decided by the revision
functions the controllers run (`core.rollout.revision.plan_revision` for an LWS,
`disaggregated_revision` for a DisaggregatedSet); the steps are the controllers' simulations
(`core.rollout.partition.simulate_rollout`, `core.disaggregated.simulation.simulate_ds_rollout`). This
package only annotates those steps with what an operator asks before applying: which groups go down
and come up, how much ready capacity is left, how many extra accelerators the surge needs and
whether the nodes have them, and how long it may take given how long groups took to get ready so
far.

* `steps` — the plan and its steps, what every plan shares (capacity, time to ready, the surge's
  accelerators against the nodes' free ones);
* `leaderworkerset` — an LWS's plan, in named steps: no rollout, in place, or the rolling update;
* `disaggregatedset` — a DisaggregatedSet's plan, its roles rolled together.
"""

from leaderworkerset.core.plan.disaggregatedset import plan_disaggregatedset
from leaderworkerset.core.plan.leaderworkerset import plan_leaderworkerset
from leaderworkerset.core.plan.steps import ChangeKind, Plan, PlanStep, surge_warnings, with_spec

__all__ = [
    "ChangeKind",
    "Plan",
    "PlanStep",
    "plan_disaggregatedset",
    "plan_leaderworkerset",
    "surge_warnings",
    "with_spec",
]
