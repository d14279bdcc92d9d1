"""API requests by verb, counted by kube-apiserver itself per client identity (its audit log).

The devcluster's apiserver runs with an audit policy that logs, at Metadata level, only requests of
the benchmark's controller identities (one ServiceAccount per controller); everything else (the
harness, kube-controller-manager, the scheduler, kwok) is level None and costs nothing. A request
counts once: at ResponseComplete, or at ResponseStarted for a watch (a watch completes only when it
ends). APF would attribute requests to a FlowSchema too, but its metrics carry no verb.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import yaml


def policy(users: list[str]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "audit.k8s.io/v1",
            "kind": "Policy",
            "omitStages": ["RequestReceived"],
            "rules": [{"level": "Metadata", "users": users}, {"level": "None"}],
        }
    )


def apiserver_args(workdir: Path, users: list[str]) -> tuple[str, ...]:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "audit-policy.yaml"
    path.write_text(policy(users))
    return (
        f"--audit-policy-file={path}",
        f"--audit-log-path={workdir / 'audit.log'}",
        "--audit-log-format=json",
        "--audit-log-maxsize=0",
        "--audit-log-mode=batch",
        "--audit-log-batch-max-wait=1s",
    )


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@dataclass
class AuditLog:
    path: Path

    def offset(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def count(self, since_offset: int, start: float, end: float, user: str) -> dict[str, int]:
        """Requests by `verb resource` of `user` received in [start, end] (wall-clock seconds)."""
        counts: Counter[str] = Counter()
        if not self.path.exists():
            return {}
        with self.path.open("rb") as handle:
            handle.seek(since_offset)
            for line in handle:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("user", {}).get("username") != user:
                    continue
                verb, stage = event.get("verb", ""), event.get("stage")
                if stage != ("ResponseStarted" if verb == "watch" else "ResponseComplete"):
                    continue
                if not start <= _seconds(event["requestReceivedTimestamp"]) <= end:
                    continue
                ref = event.get("objectRef") or {}
                resource = ref.get("resource", "?") + (
                    "/" + ref["subresource"] if ref.get("subresource") else ""
                )
                counts[f"{verb} {resource}"] += 1
        return dict(counts)
