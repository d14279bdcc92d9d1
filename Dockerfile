# syntax=docker/dockerfile:1.7
# The manager image: `lws manager` on a slim CPython 3.11, with exactly the locked dependencies.
#
#   docker build -t lws-python:dev .
#   docker run --rm lws-python:dev --help
#
# The image's contract (user 65532:65532, entrypoint, PATH, /opt/lws, writable paths, ports, labels) is
# hack/image-contract.toml; hack/build-image.sh builds the same contract without Docker, and
# tests/unit/image/test_dockerfile_contract.py checks this file against it. Works with a read-only root
# filesystem: the bytecode is compiled at build time, and the only writable path the manager needs is
# /tmp (the webhook cert dir), which the Deployment mounts as an emptyDir.
#
# Multi-arch (the release workflow): docker buildx build --platform linux/amd64,linux/arm64 .

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.13.9

FROM ${UV_IMAGE} AS uv

FROM ${PYTHON_IMAGE} AS build
COPY --from=uv /uv /usr/local/bin/uv
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3.11 \
    UV_PROJECT_ENVIRONMENT=/opt/lws
WORKDIR /src
# Dependencies first (their layer survives source edits), from the lock file only.
COPY pyproject.toml uv.lock README.md ./
RUN --mount=type=cache,target=/root/.cache/uv uv sync --frozen --no-dev --no-install-project
COPY src ./src
# (uv's lock file of the virtualenv is world-writable and unused at run time.) uv compiles the plain
# bytecode; the image runs with PYTHONOPTIMIZE=2, so that level's too (the base image's own library
# has every level: CPython's install compiles them all).
RUN --mount=type=cache,target=/root/.cache/uv uv sync --frozen --no-dev --no-editable \
 && rm -f /opt/lws/.lock \
 && /opt/lws/bin/python -m compileall -q -o 2 /opt/lws/lib \
 && /opt/lws/bin/lws --version

FROM ${PYTHON_IMAGE}
ARG PYTHON_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="lws-python" \
      org.opencontainers.image.description="LeaderWorkerSet and DisaggregatedSet controllers, drop-in for kubernetes-sigs/lws" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
COPY --from=build /opt/lws /opt/lws
ENV PATH=/opt/lws/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONOPTIMIZE=2
USER 65532:65532
WORKDIR /
EXPOSE 9443 8443 8081
ENTRYPOINT ["lws", "manager"]
