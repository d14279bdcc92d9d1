"""Our public API surface: the shapes and names upstream users and manifests depend on.

* ``constants`` — every label, annotation, env var, gate, condition, event and default name.
* ``extensions`` — this project's own ``leaderworkerset.dev/`` annotations, conditions and events.
* ``upstreammain`` — names from upstream's main branch after v1.0 that we speak or refuse.
* ``leaderworkerset``, ``disaggregatedset``, ``scheduling`` — msgspec models of the three CRDs.
* ``codec`` — lossless decode/encode between JSON-shaped dicts and the models.
* ``config`` and ``tls`` — the manager's Configuration file (v1, v1alpha1) and its TLS options.
* ``names`` — Kubernetes name rules with apimachinery's error wording.
* ``installation`` — the object names of an in-cluster install, as upstream names them.
* ``_base`` — the struct base class and CRD schema annotations the models share.

This package imports no other layer of ``leaderworkerset``; every other layer may import it.
"""
