"""The side-by-side benchmark's bookkeeping: audit-log counting per identity, medians and ratios."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from benchmarks.sidebyside import audit, procstat, reconciles, summary

OURS = "system:serviceaccount:lws-system:bench-ours"
UPSTREAM = "system:serviceaccount:lws-system:bench-upstream"


def event(user: str, verb: str, stage: str, at: str, resource: str = "pods", sub: str | None = None) -> str:
    ref = {"resource": resource} | ({"subresource": sub} if sub else {})
    return json.dumps(
        {
            "user": {"username": user},
            "verb": verb,
            "stage": stage,
            "requestReceivedTimestamp": at,
            "objectRef": ref,
        }
    )


T0, T1 = 1_780_000_000.0, 1_780_000_060.0  # 2026-05-28T20:26:40Z .. +60 s
INSIDE, BEFORE, AFTER = (
    "2026-05-28T20:27:00.000000Z",
    "2026-05-28T20:26:00.000000Z",
    "2026-05-28T20:28:00.000000Z",
)


@dataclass(frozen=True)
class CountCase:
    lines: tuple[str, ...]
    want: dict[str, int]


COUNT_CASES = [
    pytest.param(
        CountCase(
            (event(OURS, "create", "ResponseComplete", INSIDE, "statefulsets"),), {"create statefulsets": 1}
        ),
        id="a-completed-create-counts-once",
    ),
    pytest.param(
        CountCase(
            (
                event(OURS, "watch", "ResponseStarted", INSIDE),
                event(OURS, "watch", "ResponseComplete", INSIDE),
            ),
            {"watch pods": 1},
        ),
        id="a-watch-counts-when-it-starts-not-when-it-ends",
    ),
    pytest.param(
        CountCase((event(UPSTREAM, "get", "ResponseComplete", INSIDE),), {}),
        id="another-identity-is-not-counted",
    ),
    pytest.param(
        CountCase(
            (event(OURS, "get", "ResponseComplete", BEFORE), event(OURS, "get", "ResponseComplete", AFTER)),
            {},
        ),
        id="requests-outside-the-window-are-not-counted",
    ),
    pytest.param(
        CountCase(
            (event(OURS, "update", "ResponseComplete", INSIDE, "leaderworkersets", "status"), "not json"),
            {"update leaderworkersets/status": 1},
        ),
        id="subresource-named-and-a-torn-line-skipped",
    ),
]


@pytest.mark.parametrize("case", COUNT_CASES)
def test_audit_count(case: CountCase, tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text("\n".join(case.lines) + "\n")
    assert audit.AuditLog(path).count(0, T0, T1, OURS) == case.want


def test_audit_count_cases_ran() -> None:
    assert len(COUNT_CASES) == 5


def test_summary_medians_spread_and_ratios() -> None:
    records = [
        {
            "scenario": "large",
            "controller": who,
            "repeat": i,
            "groups": 10,
            "load_before": 1.0,
            "ok": True,
            "seconds": s,
            "requests_total": r,
            "reconciles_leaderworkerset": s,
            "reconciles_pod": r * 100,
        }
        for who, values in (("ours", [(3, 30), (1, 10), (2, 20)]), ("upstream", [(4, 40), (4, 40), (4, 40)]))
        for i, (s, r) in enumerate(values)
    ]
    records.append(
        {
            "scenario": "large",
            "controller": "ours",
            "repeat": 3,
            "groups": 10,
            "load_before": 1.0,
            "ok": False,
            "error": "GoalTimeoutError",
        }
    )
    table = summary.summarise(records)
    ours = table["large"]["ours"]
    assert ours["seconds"] == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert ours["failed"] == 1
    assert table["large"]["ratio"] == {"seconds": 0.5, "requests_total": 0.5}
    assert summary.markdown(table).splitlines()[2:] == [
        "| large | ours (1 failed) | 2.0 (1.0-3.0) | — | — | — | 20 (10-30) "
        "| 2 (1-3) / 2,000 (1,000-3,000) |",
        "| large | upstream | 4.0 (4.0-4.0) | — | — | — | 40 (40-40) | 4 (4-4) / 4,000 (4,000-4,000) |",
        "| large | **ours / upstream** | 0.50x | — | — | — | 0.50x | 0.50x / 0.50x |",
    ]


def memory_record(who: str, level: int, repeat: int, peak: float, seconds: float) -> dict[str, object]:
    return {
        "scenario": "memory",
        "controller": who,
        "repeat": repeat,
        "groups": 0,
        "load_before": 1.0,
        "ok": True,
        "cluster_pods": level,
        "seconds": seconds,
        "peak_rss_mib": peak,
    }


def test_memory_levels_are_summarised_and_judged_each_on_its_own() -> None:
    """A median across levels would mix 2,000 and 10,000 cluster pods: every level gets its row, and
    the targets table judges each level, with the 0.5x RSS bound only at 10,000."""
    from benchmarks.plots import targets_markdown

    records = [
        memory_record(who, level, repeat, peak * (1 + repeat / 10), seconds)
        for who, level, peak, seconds in (
            ("ours", 2000, 120.0, 30.0),
            ("upstream", 2000, 100.0, 30.0),
            ("ours", 10000, 160.0, 90.0),
            ("upstream", 10000, 400.0, 100.0),
        )
        for repeat in range(3)
    ]
    table = summary.summarise(records)
    assert sorted(table) == ["memory 10000", "memory 2000"]
    peak = {"median": 132.0, "min": 120.0, "max": 144.0, "n": 3}
    assert table["memory 2000"]["ours"]["peak_rss_mib"] == peak
    assert table["memory 10000"]["ratio"]["peak_rss_mib"] == pytest.approx(0.4)
    rows = targets_markdown(table).splitlines()[2:]
    assert rows == [
        "| time to Available | memory 2000 | 1.00 | ≤ 1.0 | met |",
        "| time to Available | memory 10000 | 0.90 | ≤ 1.0 | met |",
        "| peak RSS | memory 2000 | 1.20 | ≤ 1.0 | missed by 20 % |",
        "| peak RSS | memory 10000 | 0.40 | ≤ 1.0 | met |",
        "| peak RSS at 10,000 cluster pods | memory 10000 | 0.40 | ≤ 0.5 | met |",
    ]


EXPOSITION = """# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="leaderworkerset",result="success"} 60
controller_runtime_reconcile_total{controller="leaderworkerset",result="requeue"} 7
controller_runtime_reconcile_total{controller="pod",result="success"} 676
controller_runtime_reconcile_total{controller="pod",result="error"} 0
controller_runtime_reconcile_errors_total{controller="pod"} 3
"""


def test_reconciles_sum_the_results_per_controller_and_difference_names_each() -> None:
    after = reconciles.totals(EXPOSITION)
    assert after == {"leaderworkerset": 67, "pod": 676}
    assert reconciles.difference({"leaderworkerset": 7, "pod": 676}, after) == {
        "reconciles_leaderworkerset": 60
    }


def test_a_memory_level_beyond_the_clusters_pod_capacity_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """50 kwok nodes take 12,500 pods: a 20,000-pod level would leave pods Pending until its goal
    times out."""
    from benchmarks.sidebyside.__main__ import main

    with pytest.raises(SystemExit) as refused:
        main(["--size", "full", "--levels", "10000,20000"])
    assert refused.value.code == 2
    assert "memory levels [20000] exceed the full cluster's 12500 pods" in capsys.readouterr().err


def test_pod_cleanup_goes_on_when_the_delete_collections_response_is_cut_short() -> None:
    """Under load the apiserver may cut a delete-collection's megabytes of response short; the
    pods still go, so cleanup polls on instead of failing the run (it lost a whole pass once)."""
    import asyncio
    import http.client

    from benchmarks.sidebyside.scenarios import pods_gone

    class Cluster:
        def __init__(self) -> None:
            self.pods = ["p"]
            self.deletes = 0

        async def list(self, ref: object, ns: str) -> list[str]:
            return self.pods

        def request(self, method: str, path: str, query: dict[str, object]) -> None:
            self.deletes += 1
            self.pods = []  # the server deleted them, then the response broke off
            raise http.client.IncompleteRead(b"partial")

    cluster = Cluster()
    asyncio.run(pods_gone(cluster, cluster, "ns", timeout=5))  # type: ignore[arg-type]
    assert (cluster.deletes, cluster.pods) == (1, [])


STATUS = """Name:\tpython
VmHWM:\t  90000 kB
VmRSS:\t  81920 kB
RssAnon:\t  61440 kB
RssFile:\t  20480 kB
RssShmem:\t      0 kB
"""


def test_the_peak_sample_is_split_into_heap_and_mapped_files() -> None:
    """The report's RSS bounds need to tell the heap (anonymous) from libraries mapped from disk."""
    assert procstat.status_values(STATUS, procstat.RSS_PARTS) == {
        "VmRSS": 81920,
        "RssAnon": 61440,
        "RssFile": 20480,
        "RssShmem": 0,
    }
    sampler = procstat.Sampler(pid=0)
    small = dict.fromkeys(procstat.RSS_PARTS, 1024) | {"VmRSS": 3072}
    big = procstat.status_values(STATUS, procstat.RSS_PARTS)
    sampler.samples = [(1.0, small), (2.0, big), (3.0, small), (9.0, big | {"VmRSS": 99999})]
    assert sampler.parts_at_peak(0.5, 3.5) == {
        "peak_rss_anon_mib": 60.0,
        "peak_rss_file_mib": 20.0,
        "peak_rss_shmem_mib": 0.0,
    }
    assert sampler.rss_between(0.5, 3.5) == (80.0, 3.0)
    assert sampler.parts_at_peak(4.0, 5.0) == {}


def test_a_live_process_rss_is_the_sum_of_its_parts() -> None:
    """The kernel's VmRSS is RssAnon + RssFile + RssShmem, read from one status text."""
    parts = procstat.status_totals([os.getpid()], procstat.RSS_PARTS)
    assert parts["VmRSS"] > 0
    assert parts["VmRSS"] == parts["RssAnon"] + parts["RssFile"] + parts["RssShmem"]


SMAPS = """\
55d0c0000000-55d0c0400000 r-xp 00000000 08:01 101 /opt/py/bin/python3.11
Size:               4096 kB
Rss:                3000 kB
VmFlags: rd ex mr mw me dw sd
55d0c1000000-55d0c5000000 rw-p 00000000 00:00 0 [heap]
Rss:                9000 kB
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
Rss:                1024 kB
7f0000100000-7f0000200000 rw-p 00000000 00:00 0
Rss:                 512 kB
7f0000300000-7f0000310000 r-xp 00000000 08:01 202 /v/site-packages/aiohttp/_http_parser.cpython-311.so
Rss:                  40 kB
7f0000310000-7f0000320000 r-xp 00000000 08:01 203 /v/site-packages/_cffi_backend.cpython-311.so
Rss:                   8 kB
7f0000400000-7f0000500000 r-xp 00000000 08:01 303 /usr/lib/x86_64-linux-gnu/libcrypto.so.3
Rss:                 700 kB
7f0000500000-7f0000510000 r-xp 00000000 08:01 304 /opt/py/lib/python3.11/lib-dynload/_ssl.so
Rss:                  60 kB
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
Rss:                 132 kB
"""


def test_the_rss_is_attributed_to_the_heap_the_interpreter_and_each_library() -> None:
    """A peak's breakdown says which part of the RSS is whose: heap, interpreter, packages, libraries."""
    assert procstat.smaps_kib(SMAPS) == {
        "interpreter": 3000,
        "[heap]": 9000,
        "anonymous": 1536,
        "package aiohttp": 40,
        "package cffi_backend": 8,
        "libcrypto": 700,
        "stdlib extension modules": 60,
        "[stack]": 132,
    }
    sampler = procstat.Sampler(pid=0)
    sampler.open_window()
    sampler.breakdown = (16 * 1024, procstat.smaps_kib(SMAPS))
    assert sampler.breakdown_mib(smallest=0.5) == {
        "[heap]": 8.8,
        "interpreter": 2.9,
        "anonymous": 1.5,
        "libcrypto": 0.7,
        "other": 0.2,
        "at_rss": 16.0,
    }
    assert sampler.breakdown_mib() == {}, "a closed window reads no breakdown"


def test_the_sampler_reads_a_breakdown_near_the_windows_peak_of_a_live_process() -> None:
    """Breakdowns are read in the sampler thread only while a window is open, within
    BREAKDOWN_GROWTH of the window's peak; a live interpreter shows itself and its heap."""
    sampler = procstat.Sampler(pid=os.getpid(), interval=0.01)
    sampler.start()
    try:
        sampler.open_window()
        opened = time.monotonic()
        deadline = opened + 10
        # polls for the thread's reads, not pauses: each ends as soon as the read is there
        while sampler.breakdown is None and time.monotonic() < deadline:
            time.sleep(0.01)
        before = sampler.breakdown[0] if sampler.breakdown else 0
        ballast = bytearray(64 * 1024 * 1024)  # zero-filled, so resident at once
        while (sampler.breakdown or (0, {}))[0] < before + 60 * 1024 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        sampler.stop()  # joins the thread: every sample taken has had its read
    peak = max(parts["VmRSS"] for at, parts in sampler.samples if at >= opened)
    owners = sampler.breakdown_mib()
    assert owners["at_rss"] * 1024 * procstat.BREAKDOWN_GROWTH >= peak - 1024
    assert owners["at_rss"] >= before / 1024 + 60
    assert owners["interpreter"] > 0
    assert owners.get("[heap]", 0) + owners.get("anonymous", 0) >= 64, owners
    del ballast


def test_a_later_results_file_replaces_the_scenarios_it_measured_again(tmp_path: Path) -> None:
    from benchmarks.plots import load

    def results(name: str, records: list[dict[str, Any]], size: str = "full") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({"size": {"name": size}, "records": records}))
        return path

    def run(scenario: str, rss: float, pods: int | None = None) -> dict[str, Any]:
        record: dict[str, Any] = {"scenario": scenario, "controller": "ours", "ok": True, "peak_rss_mib": rss}
        return record if pods is None else record | {"cluster_pods": pods}

    smaller = results("ci.json", [run("large", 80), run("memory", 90, 400)], size="ci")
    first = results("first.json", [run("large", 160), run("memory", 118, 2000), run("memory", 255, 10000)])
    rerun = results("rerun.json", [run("memory", 111, 10000), run("memory", 107, 10000)])
    kept = sorted(
        (r["size"], r["scenario"], r.get("cluster_pods"), r["peak_rss_mib"])
        for r in load([smaller, first, rerun])
    )
    assert kept == [
        ("ci", "large", None, 80),  # another size measures another thing: kept
        ("ci", "memory", 400, 90),
        ("full", "large", None, 160),
        ("full", "memory", 2000, 118),  # not measured again: kept
        ("full", "memory", 10000, 107),  # the rerun's two records, not the first file's 255
        ("full", "memory", 10000, 111),
    ]
