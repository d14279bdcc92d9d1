"""Reconcilers, one per kind (design.md §2): `leaderworkerset` (a package: leader StatefulSet,
Services, revisions, status) and `group` (upstream's pod controller: worker StatefulSets and
restart policies), sharing the caches declared in `informers` and the read-your-writes memories in
`memos`. `setup.register_controllers` adds both to a runtime Manager.
"""
