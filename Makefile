# The two commands of the README: `make up` (the demo) and `make test` (the whole suite).
# Both bootstrap what they need (uv, the virtualenv, and on first use the local control plane binaries).
.PHONY: up test lint
up:
	./hack/bootstrap.sh run lws up
test:
	./hack/bootstrap.sh test
lint:
	./hack/bootstrap.sh lint
