"""Admission webhooks (spec §4): pure handlers over the JSON the API server sends, plus serving.

* `leaderworkerset` — defaulting (`default_lws`) and validation (`validate_create`/`validate_update`)
* `scheduling` — the `spec.scheduling` rules (`SchedulingAdmission` carries gate/provider/discovery)
* `pod` — pod mutation (`default_pod`) and the no-op pod validation
* `disaggregatedset` — DisaggregatedSet validation (`validate` → warnings, field errors)
* `admission` — AdmissionReview in/out for every path (`review`, `WebhookOptions`)
* `server`, `certs`, `configurations`, `metrics`, `runner` — HTTPS server with cert hot reload,
  CA/serving certificates in a Secret with caBundle injection, webhook configurations, metrics,
  and `runner.serve`, the certificates then the server.
* `setup` — `register_webhooks`: the server, its readiness checks and the controllers' gate on a
  runtime Manager, as controllers/setup.py registers the controllers (called by `lws manager`).
"""
