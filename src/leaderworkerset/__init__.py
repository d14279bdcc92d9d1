"""LeaderWorkerSet and DisaggregatedSet for Kubernetes, in Python.

Drop-in compatible with kubernetes-sigs/lws v1.0: same CRDs, labels, annotations,
status and webhook behaviour. See ``docs/`` and the README.
"""

__version__ = "0.1.0"
