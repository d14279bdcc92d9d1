"""What ``lws status`` shows, read from the cluster and rendered: ``lws`` (a LeaderWorkerSet's
group tree), ``ds`` (a DisaggregatedSet's role tree, built on ``lws``), ``failures`` (the
failure ledger) and ``quarantine`` (a set's quarantined nodes and their evidence). The command and
its watch loop are in ``cli/status.py``; nothing here imports it.
"""
