"""Reconciles per controller, read from the manager's own `controller_runtime_reconcile_total`.

Both managers export controller-runtime's counter (ours under the same name and labels), so a
scrape before and after a phase gives each controller's reconcile count for the same action: the
figure that says how much work one event burst turns into, independent of CPU speed."""

from __future__ import annotations

import re
from collections import defaultdict

_SAMPLE = re.compile(r"^controller_runtime_reconcile_total\{([^}]*)\}\s+([0-9.eE+]+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def totals(exposition: str) -> dict[str, int]:
    """Reconciles per controller name, summed over results (success, error, requeue, requeue_after)."""
    counts: dict[str, float] = defaultdict(float)
    for line in exposition.splitlines():
        match = _SAMPLE.match(line)
        if match:
            labels = dict(_LABEL.findall(match.group(1)))
            counts[labels.get("controller", "")] += float(match.group(2))
    return {name: int(value) for name, value in counts.items()}


def difference(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Record fields `reconciles_<controller>` for the reconciles between two scrapes."""
    return {
        f"reconciles_{name.replace('-', '_')}": after[name] - before.get(name, 0)
        for name in sorted(after)
        if after[name] - before.get(name, 0)
    }
