"""What ``lws status`` shows, read from the cluster and rendered: ``lws`` (a LeaderWorkerSet's
group tree), ``ds`` (a DisaggregatedSet's role tree, built on ``lws``) and ``failures`` (the
failure ledger). The command and its watch loop are in ``cli/status.py``; nothing here imports it.
"""
