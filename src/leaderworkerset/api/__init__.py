"""Our public API surface: the shapes and names upstream users and manifests depend on.

* ``constants`` — every label, annotation, env var, gate, condition, event and default name.
* ``leaderworkerset``, ``disaggregatedset``, ``scheduling`` — msgspec models of the three CRDs.
* ``codec`` — lossless decode/encode between JSON-shaped dicts and the models.
* ``config`` and ``tls`` — the manager's Configuration file (v1, v1alpha1) and its TLS options.
* ``names`` — Kubernetes name rules with apimachinery's error wording.

This package imports no other layer of ``leaderworkerset``; every other layer may import it.
"""
