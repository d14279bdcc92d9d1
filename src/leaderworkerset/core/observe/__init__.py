"""What is said about a group without changing it.

* `diagnosis` — why a group is not ready, in one line (`lws status`);
* `notready` — the opt-in GroupNotReady events (docs/status.md);
* `readiness` — how long a group took to become ready, phase by phase.
"""
