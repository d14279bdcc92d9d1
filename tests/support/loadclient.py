"""A client that keeps sending requests to one URL and records every answer, one JSON line each:
`{"t": <unix time>, "ok": <2xx>, "status": <code or 0>, "error": <text>, "body": <decoded JSON>}`.

    python -m tests.support.loadclient URL OUT [--workers N] [--count N]

It runs until SIGTERM (finishing the requests it has sent) or until `--count` requests were answered.
The workload tests run it inside a real node's network namespace, where the set's Service address
exists (kube-proxy's rules), so its requests take the path a client in the cluster takes
(tests/support/workloads.py)."""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import threading
import time
import urllib.error
import urllib.request
from typing import Any, TextIO

TIMEOUT = 30.0


def once(url: str) -> dict[str, Any]:
    started = time.time()
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:
            status, data = answer.status, answer.read()
    except urllib.error.HTTPError as err:
        status, data = err.code, err.read()
    # Refused, reset, timed out, or cut off mid-answer (IncompleteRead, RemoteDisconnected): a failed
    # request, never the end of the client.
    except (OSError, urllib.error.URLError, http.client.HTTPException) as err:
        return {"t": started, "ok": False, "status": 0, "error": f"{type(err).__name__}: {err}", "body": None}
    try:
        body = json.loads(data)
    except ValueError:
        body = data.decode(errors="replace")
    return {"t": started, "ok": 200 <= status < 300, "status": status, "error": "", "body": body}


def run(url: str, out: TextIO, workers: int, count: int | None) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    lock = threading.Lock()
    answered = [0]

    def loop() -> None:
        while not stop.is_set():
            record = once(url)
            with lock:
                out.write(json.dumps(record) + "\n")
                out.flush()
                answered[0] += 1
                if count is not None and answered[0] >= count:
                    stop.set()

    threads = [threading.Thread(target=loop) for _ in range(workers)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        for thread in threads:
            thread.join(timeout=0.2)  # the main thread stays free to take SIGTERM


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("out")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--count", type=int, default=None)
    args = parser.parse_args()
    with open(args.out, "a") as out:
        run(args.url, out, args.workers, args.count)


if __name__ == "__main__":
    main()
