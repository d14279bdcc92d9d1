"""Where the manager's CPU goes, from a py-spy raw profile: the share of busy samples per part.

`py-spy record --pid <manager> --rate 100 --nonblocking --format raw -o FILE` writes one collapsed stack per
line (frames root first, separated by ";", then a sample count). Each stack goes to the category of the frame
nearest its leaf that matches one, so TLS decryption under a watch read counts as TLS and the pure core's work
under a reconcile counts as the reconcile. Samples waiting in the event loop's `select` are idle.

    uv run python -m benchmarks.pyspy_summary FILE
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("TLS handshakes (the apiserver's webhook connections)", ("do_handshake", "_make_ssl_transport")),
    ("TLS decryption of what the sockets read", ("SSLObject.read", "SSLObject.write")),
    ("gzip inflation of response bodies", ("ZLibDecompressor", "compression_utils")),
    ("webhook server", ("leaderworkerset/webhooks/",)),
    (
        "applying watch events (decode, store, handlers)",
        (
            "runtime/reflector.py",
            "runtime/store.py",
            "runtime/cache.py",
            "runtime/listwatch.py",
            "runtime/codecs.py",
            "controllers/informers.py",
            "controllers/wakeups.py",
        ),
    ),
    (
        "reconcile workers",
        (
            "leaderworkerset/controllers/",
            "runtime/controller.py",
            "runtime/workqueue.py",
            "runtime/events.py",
        ),
    ),
    (
        "the API client (requests, splitting watch streams)",
        ("runtime/transport.py", "runtime/client.py", "aiohttp/"),
    ),
    ("heap trims", ("runtime/heap.py",)),
    ("metrics (recording and serving)", ("runtime/metricsserver.py", "prometheus_client")),
    ("the event loop (socket reads, scheduling)", ("asyncio/",)),
)
IDLE_LEAF = "select (selectors.py"
CORE = "leaderworkerset/core/"  # the pure decisions: what compiling them (mypyc) could speed up


@dataclass
class Profile:
    busy: int = 0
    idle: int = 0
    by_category: Counter[str] = field(default_factory=Counter)
    in_core: int = 0  # busy samples with a frame of the pure core anywhere in the stack

    def shares(self) -> list[tuple[str, float]]:
        return [(name, 100 * n / self.busy) for name, n in self.by_category.most_common()]


def category(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, markers in CATEGORIES:
            if any(marker in frame for marker in markers):
                return name
    return "other"


def summarise(lines: Iterable[str]) -> Profile:
    profile = Profile()
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        frames, samples = stack.split(";"), int(count)
        if IDLE_LEAF in frames[-1]:
            profile.idle += samples
            continue
        profile.busy += samples
        profile.by_category[category(frames)] += samples
        if any(CORE in frame for frame in frames):
            profile.in_core += samples
    return profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw", help="a py-spy --format raw output")
    with open(parser.parse_args().raw) as raw:
        profile = summarise(raw)
    print(f"busy samples {profile.busy}, idle in select {profile.idle}")
    for name, share in profile.shares():
        print(f"{share:5.1f} %  {name}")
    print(f"{100 * profile.in_core / max(profile.busy, 1):5.1f} %  with the pure core ({CORE}) on the stack")


if __name__ == "__main__":
    main()
