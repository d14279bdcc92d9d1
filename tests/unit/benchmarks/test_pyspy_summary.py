"""The py-spy summary: each busy stack counts for the category of the frame nearest its leaf."""

from __future__ import annotations

from benchmarks import pyspy_summary

LOOP = "run_forever (asyncio/base_events.py:608);_run_once (asyncio/base_events.py:1922)"
RAW = [
    f"{LOOP};select (selectors.py:468) 50",
    f"{LOOP};_process (leaderworkerset/runtime/controller.py:300);"
    "reconcile (leaderworkerset/controllers/group/reconciler.py:80);"
    "group_state (leaderworkerset/core/groups/state.py:40) 30",
    f"{LOOP};_read_ready (asyncio/selector_events.py:1000);_do_read (asyncio/sslproto.py:700);"
    "data_received (aiohttp/client_proto.py:300);_apply (leaderworkerset/runtime/reflector.py:90);"
    "decode_object (leaderworkerset/runtime/codecs.py:20) 15",
    f"{LOOP};_do_read (asyncio/sslproto.py:700);read (ssl.py:917);SSLObject.read (ssl.py:917) 5",
    f"{LOOP};_run (asyncio/events.py:84) 10",
    "",
]


def test_busy_samples_go_to_the_category_nearest_their_leaf() -> None:
    profile = pyspy_summary.summarise(RAW)
    assert (profile.busy, profile.idle, profile.in_core) == (60, 50, 30)
    assert dict(profile.by_category) == {
        "reconcile workers": 30,
        "applying watch events (decode, store, handlers)": 15,
        "the event loop (socket reads, scheduling)": 10,
        "TLS decryption of what the sockets read": 5,
    }
    assert profile.shares()[0] == ("reconcile workers", 50.0)
