"""Spellings from upstream's main branch after v1.0 that this project already speaks or refuses by name
(docs/compatibility.md, "Upstream main after v1.0"). Kept apart from `constants` (upstream v1.0's
contract) so a reader sees which names a v1.0 cluster never carries.
"""

from typing import Final

# spec.scalingPolicy.duringRollout (KEP-1022): whether a new replica target waits for the rollout
# (RolloutCoupled, v1.0's behaviour and the default) or applies mid-rollout.
SCALING_ROLLOUT_COUPLED: Final = "RolloutCoupled"
SCALING_ADVANCE_ROLLOUT: Final = "AdvanceRollout"
SCALING_DURING_ROLLOUT_POLICIES: Final = (SCALING_ROLLOUT_COUPLED, SCALING_ADVANCE_ROLLOUT)

# `leaderWorkerTemplate.restartBackoff`: what a missing baseSeconds or capSeconds means, and what the
# defaulting webhook writes into them. Upstream's names; its values were not readable, so these are
# ours: the pair its webhook tests use as a valid back-off.
DEFAULT_RESTART_BACKOFF_BASE_SECONDS: Final = 10
DEFAULT_RESTART_BACKOFF_CAP_SECONDS: Final = 300

# Which revision hash a DisaggregatedSet uses (absent: v1.0's, "legacy"; "v2"). This controller computes
# only v1.0's: a set asking for another is refused at admission and, with the webhooks off, flagged with
# this condition and event (core/disaggregated/revision.py).
ANNOTATION_DS_REVISION_HASH_VERSION: Final = "disaggregatedset.x-k8s.io/revision-hash-version"
CONDITION_REVISION_HASH_VERSION_UNSUPPORTED: Final = "RevisionHashVersionUnsupported"
EVENT_UNSUPPORTED_REVISION_HASH_VERSION: Final = "UnsupportedRevisionHashVersion"
