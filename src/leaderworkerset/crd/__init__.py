"""The CRDs, generated from the ``api`` models (``lws crds``, ``deploy/crds/``, the chart's ``crds/``).

* ``definitions`` — the three CustomResourceDefinitions, assembled from the models;
* ``builder`` — structural OpenAPI v3 schemas from msgspec models; ``embedded`` — the schemas of
  embedded Kubernetes types; ``markers`` — CRD facts the models do not carry; ``descriptions`` —
  ``kubectl explain``'s texts for our own types;
* ``render`` — deterministic YAML; ``generate`` — write the manifests (dev time); ``packaged`` — the
  manifests shipped inside the package; ``install`` — apply them and wait until they are served;
* ``structural`` — what kube-apiserver does to an object with a structural schema;
  ``compare`` — a path-by-path comparison of two schemas.
"""
