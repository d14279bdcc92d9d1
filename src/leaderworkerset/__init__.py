"""LeaderWorkerSet and DisaggregatedSet for Kubernetes, in Python.

Drop-in compatible with kubernetes-sigs/lws v1.0: same CRDs, labels, annotations,
status and webhook behaviour. See ``docs/`` and the README.

The layers (docs/architecture.md): ``api`` (models and names), ``core`` (pure decisions),
``controllers`` and ``webhooks`` (the I/O shells around ``core``), ``runtime`` (caches, work
queue, manager), ``crd`` and ``install`` (generated CRDs and install manifests), ``devcluster``
(the local control plane), ``cli`` (the ``lws`` command) and ``agent`` (the in-place restart
sidecar).
"""

__version__ = "0.1.0"
