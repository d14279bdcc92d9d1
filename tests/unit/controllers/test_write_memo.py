"""`WriteMemo`: our own write stands in for the cache until the watch delivers it (or its deletion)."""

from __future__ import annotations

from typing import Any

from leaderworkerset.controllers.memos import WriteMemo
from leaderworkerset.runtime.objects import ObjectKey

KEY = ObjectKey("ns", "w")


def at(rv: int) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "ns", "resourceVersion": str(rv)}}


def memo_with(rv: int) -> WriteMemo:
    memo = WriteMemo()
    memo.remember(KEY, at(rv))
    return memo


def test_the_write_stands_in_until_the_cache_holds_that_version() -> None:
    memo = memo_with(10)
    assert memo.freshest(KEY, None, "9") == at(10)  # the cache has not seen the write yet
    assert memo.freshest(KEY, at(8), "9") == at(10)  # an older cached copy
    assert memo.freshest(KEY, at(12), "12") == at(12)  # caught up: the cache from now on
    assert memo.freshest(KEY, None, "13") is None


def test_an_object_the_cache_never_held_but_has_seen_past_was_deleted() -> None:
    """A relist after a watch gap reports no deletion of an object the cache never held: without
    this, the memo would keep a deleted object alive for ever (a group waiting on a ghost)."""
    memo = memo_with(10)
    assert memo.freshest(KEY, None, "10") is None
    assert memo.freshest(KEY, None, "5") is None  # forgotten, not brought back


def test_an_unknown_cache_version_keeps_the_write() -> None:
    assert memo_with(10).freshest(KEY, None) == at(10)
    assert memo_with(10).freshest(KEY, None, "opaque") == at(10)


def test_own_write_is_exactly_the_version_the_write_returned() -> None:
    memo = memo_with(10)
    assert memo.is_own_write(KEY, "10")
    assert not memo.is_own_write(KEY, "11")  # somebody else's write after ours
    assert not memo.is_own_write(KEY, "9")
    assert not memo.is_own_write(KEY, None)
    assert not memo.is_own_write(ObjectKey("ns", "other"), "10")
    assert not WriteMemo().is_own_write(KEY, "10")
