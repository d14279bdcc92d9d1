"""The webhook benchmark's repeats: alternating order, and medians and spreads of every figure."""

from __future__ import annotations

from benchmarks.webhook_latency import median_leaves, repeat_order, spread_leaves


def test_the_servers_order_reverses_on_every_other_repeat() -> None:
    orders = [repeat_order(["ours", "upstream"], repeat) for repeat in range(3)]
    assert orders == [["ours", "upstream"], ["upstream", "ours"], ["ours", "upstream"]]


def test_one_server_keeps_its_order() -> None:
    assert repeat_order(["ours"], 1) == ["ours"]


def _run(p99: float, errors: int) -> dict[str, object]:
    baseline = {"p99_ms": p99, "errors": errors, "label": "kept"}
    return {"phases": {"baseline": baseline}, "added_p99_ms": p99 / 2}


def test_every_number_becomes_its_median_across_repeats_and_text_is_kept() -> None:
    runs = [_run(9.0, 0), _run(4.0, 2), _run(6.0, 1)]
    assert median_leaves(runs) == {
        "phases": {"baseline": {"p99_ms": 6.0, "errors": 1, "label": "kept"}},
        "added_p99_ms": 3.0,
    }


def test_the_spread_is_the_lowest_and_highest_of_each_number() -> None:
    runs = [_run(9.0, 0), _run(4.0, 2), _run(6.0, 1)]
    assert spread_leaves(runs) == {
        "phases": {"baseline": {"p99_ms": [4.0, 9.0], "errors": [0, 2], "label": "kept"}},
        "added_p99_ms": [2.0, 4.5],
    }


def test_one_repeat_is_its_own_median() -> None:
    assert median_leaves([_run(5.0, 0)]) == _run(5.0, 0)
