"""What a group is, read from objects as the API server returns them.

* `state` — a group's observed state (ready, updated, its leader and workers, Hash identity's pods);
* `keys` — group and subgroup keys, and the ordinal suffix of StatefulSet pod names;
* `naming` — the names of the objects a LeaderWorkerSet owns;
* `subgroup` — subgroup index arithmetic.
"""
