"""Side-by-side benchmark of our controller and upstream's (sigs.k8s.io/lws v0.9.0) on one cluster.

    uv run python -m benchmarks.sidebyside --size tiny|ci|mid|full [--repeats N] [--only a,b]
                                           [--memory-repeats N] [--levels 2000,10000]
                                           [--controllers ours,upstream] [--results benchmarks/results]

See docs/benchmarks.md for what is measured and how.
"""
