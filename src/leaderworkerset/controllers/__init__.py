"""Reconcilers, one module per kind (design.md §2): `leaderworkerset` (leader StatefulSet,
Services, revisions, status) and `group` (upstream's pod controller: worker StatefulSets and
restart policies), sharing the caches declared in `informers`. `setup.register_controllers`
adds both to a runtime Manager.
"""
