"""Admission webhooks: pure handlers over the JSON the API server sends, plus serving.

The handlers:

* `leaderworkerset` — defaulting (`default_lws`) and validation (`validate_create`/`validate_update`)
* `disaggregatedset` — DisaggregatedSet validation (`validate` → warnings, field errors)
* `scheduling` — the `spec.scheduling` rules (`SchedulingAdmission` carries gate/provider/discovery),
  with `discovery`, whether the API server serves the Workload API
* `setannotations` — this project's opt-in `leaderworkerset.dev/` set annotations, checked with
  `core/setannotations.py`'s table (both set webhooks call it)
* `pod` — pod mutation (`default_pod`) and the no-op pod validation; `quarantine` (the nodes a set's
  new pods avoid) and `inplacerestart` (the cluster probe, and equipping a pod for in-place restart)
  are what it and the LWS webhook ask of two opt-in features
* `admission` — AdmissionReview in/out for every path (`review`, `WebhookOptions`); `fields` — the
  tolerant readers of the JSON the handlers are given

The serving:

* `server`, `certs`, `certissue`, `configurations`, `metrics`, `runner` — HTTPS server with cert hot
  reload, CA/serving certificates in a Secret (issued in a child process) with caBundle injection,
  webhook configurations, metrics, and `runner.serve`, the certificates then the server.
* `setup` — `register_webhooks`: the server, its readiness checks and the controllers' gate on a
  runtime Manager, as controllers/setup.py registers the controllers (called by `lws manager`).
"""
