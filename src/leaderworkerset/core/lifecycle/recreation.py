"""A group's recreation after a failure the restart policy recreates it for, decided on fresh reads
of its leader and its set (a lagging cache must never let a group restart past its limit).

`decide_recreation` names the step: nothing (the leader is gone, replaced or going), release (the
set is going), terminate (the group was retained before), exhaust (this failure spends the restart
budget) or recreate (charging the budget, when the set has one). The budget decides before the
back-off: a spent budget stops the group at once (waiting would only delay the inevitable), and a
recreation that backs off is not charged until it happens. The ledger's entries of the last two
steps are `group_entry`.
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass

from leaderworkerset.core.groups.state import is_exhausted
from leaderworkerset.core.lifecycle import ledger, restartbudget
from leaderworkerset.core.objects import Obj, is_deleting, uid_of


class RecreationStep(enum.Enum):
    NOTHING = "nothing"  # the leader is gone (the recreation is done), replaced, or being deleted
    RELEASE = "release"  # its set is gone or going: release the failed pod's group, keep no state
    TERMINATE = "terminate"  # retained after spending its budget: finish retaining it
    EXHAUST = "exhaust"  # this failure spends the budget: record it, retain the group
    RECREATE = "recreate"  # charge the budget (if any), back off (if asked), record, delete the leader


@dataclass(frozen=True)
class Recreation:
    step: RecreationStep
    # The restart budget's charge (None: the set has no maxGroupRestarts, or the step charges none).
    charge: restartbudget.RestartBudgetDecision | None = None


def same_leader(leader: Obj | None, leader_uid: str) -> bool:
    """The fresh leader is the failed group's (not gone, not replaced by a same-name leader): only
    then is its set read again."""
    return leader is not None and uid_of(leader) == leader_uid


def decide_recreation(leader_uid: str, leader: Obj | None, lws: Obj | None) -> Recreation:
    """The step for the failed group whose leader was `leader_uid`, from the fresh `leader` (None:
    not found) and `lws` (None: not found)."""
    if leader is None or not same_leader(leader, leader_uid):
        return Recreation(RecreationStep.NOTHING)
    if lws is None or is_deleting(lws):
        return Recreation(RecreationStep.RELEASE)
    if is_deleting(leader):
        return Recreation(RecreationStep.NOTHING)
    if is_exhausted(leader):
        return Recreation(RecreationStep.TERMINATE)
    limit = restartbudget.max_group_restarts(lws)
    if limit is None:
        return Recreation(RecreationStep.RECREATE)
    charge = restartbudget.decide_restart_budget(restartbudget.restart_counts(lws), leader, limit)
    if charge.step is restartbudget.RestartBudgetStep.EXHAUST:
        return Recreation(RecreationStep.EXHAUST, charge)
    return Recreation(RecreationStep.RECREATE, charge)


def group_entry(
    trigger: ledger.Trigger,
    leader: Obj,
    action: ledger.Action,
    when: datetime.datetime,
    delay: float | None = None,
) -> ledger.LedgerEntry:
    """The ledger's entry of the failed group's step (a recreation with the back-off `delay` it
    waited out, or the failure that spent its budget), named by the group and its leader."""
    return ledger.entry_for(
        trigger,
        group=ledger.group_of(leader),
        action=action,
        when=when,
        leader_uid=uid_of(leader),
        delay_seconds=delay,
    )
