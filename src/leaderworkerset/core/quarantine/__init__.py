"""Node quarantine (`leaderworkerset.dev/quarantine-after`, docs/node-quarantine.md): nodes that keep
failing a set's groups are avoided by its new pods for a while.

* `policy` — the annotations' parser and rules (rows of `core/setannotations.py`'s table);
* `decision` — which nodes qualify from the failure ledger, the quarantine state on the set, releases;
* `taint` — taint mode: which nodes to taint and untaint, and the outcomes recorded in the state.

The I/O is `controllers/quarantine/` and, for admission, `webhooks/quarantine.py`.
"""
