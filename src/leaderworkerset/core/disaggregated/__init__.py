"""DisaggregatedSet domain logic: naming, child LeaderWorkerSets, placement, status, rollout planning."""
