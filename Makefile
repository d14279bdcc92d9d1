# The two commands of the README: `make up` (the demo) and `make test` (the whole suite).
# Both bootstrap what they need (uv, the virtualenv, and on first use the local control plane binaries).
.PHONY: up test lint
# `make up REAL_NODES=2`: the demo on real nodes (root; docs/real-nodes.md).
up:
	./hack/bootstrap.sh run lws up $(if $(REAL_NODES),--real-nodes $(REAL_NODES))
test:
	./hack/bootstrap.sh test
lint:
	./hack/bootstrap.sh lint
