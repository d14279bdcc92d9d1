# The two commands of the README: `make up` (the demo) and `make test` (the whole suite).
# Both bootstrap what they need (uv, the virtualenv, and on first use the local control plane binaries).
# The tiers a contributor runs while working (CONTRIBUTING.md, "Which tests to run when"): `make check`
# (lint and unit tests, no cluster), `make test-unit`, `make test-integration`, `make test-e2e`,
# `make test-chaos`; and `make matrix`, every supported Kubernetes version and the upgrade through them
# (docs/compatibility.md). Pytest options go in ARGS, e.g. `make test-e2e ARGS="-k rollout"`.
.PHONY: up test lint check test-unit test-integration test-e2e test-chaos matrix
# `make up REAL_NODES=2`: the demo on real nodes (root; docs/real-nodes.md).
up:
	./hack/bootstrap.sh run lws up $(if $(REAL_NODES),--real-nodes $(REAL_NODES))
test:
	./hack/bootstrap.sh test $(ARGS)
lint:
	./hack/bootstrap.sh lint
check:
	./hack/bootstrap.sh check $(ARGS)
test-unit test-integration test-e2e test-chaos:
	./hack/bootstrap.sh tier $(@:test-%=%) $(ARGS)
matrix:
	./hack/bootstrap.sh run python -m tests.matrix $(ARGS)
