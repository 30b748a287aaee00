# syntax=docker/dockerfile:1
# The image of the onnx-gate action. Two stages a user meets:
#
#   verify  Python, onnxruntime, numpy, onnx and onnx-gate; no torch. A verify job mirrors the
#           serving environment, which holds no torch either, and this image pulls faster.
#           Build it with `docker build --target verify -t onnx-gate-verify .`
#   full    verify plus torch (the CPU build) and onnxscript: export (and every other command).
#           It is the last stage, so a plain `docker build .` builds it.
#
# Neither is built in a user's job: .github/workflows/release.yml builds both once per release and
# pushes them to ghcr.io with the package version as the tag, full as onnx-gate (action.yml) and
# verify as onnx-gate-verify (slim/action.yml); ci.yml builds both on every pull request and runs
# the example through them (.ci/images). Both carry the OCI labels source (which links the ghcr
# package to the repository), version and revision, from the build arguments SOURCE, VERSION and
# REVISION the release passes.
#
# Installed Python environments with exactly these pins (Python 3.11, Linux x86_64, measured with
# `du -sm` on virtual environments built from the same requirement files): verify 225 MB,
# full 1102 MB, of which torch is 754 MB. The python slim base image comes on top of both.
#
# Pins: the base image by tag, written in the FROM line itself because Dependabot's docker updates
# (.github/dependabot.yml) do not read a FROM that takes an ARG; the Python packages in
# docker/requirements-*.txt (Dependabot's pip updates); torch in TORCH_VERSION below.

FROM python:3.11.15-slim-trixie AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/onnx-gate \
    PATH=/opt/onnx-gate/bin:$PATH
# uid 1001 is the runner user on GitHub-hosted runners: the workspace and the file commands
# ($GITHUB_OUTPUT, the job summary) that GitHub mounts into the container stay writable for it. The
# verify step installs the target's runtime into the venv, so the venv belongs to that user too.
RUN useradd --uid 1001 --create-home --shell /usr/sbin/nologin gate \
 && python -m venv /opt/onnx-gate \
 && chown -R gate:gate /opt/onnx-gate
USER gate
COPY --chown=gate:gate docker/requirements-verify.txt /tmp/requirements-verify.txt
RUN pip install --requirement /tmp/requirements-verify.txt

FROM base AS verify
COPY --chown=gate:gate . /tmp/onnx-gate-src
RUN pip install --no-deps /tmp/onnx-gate-src && rm -rf /tmp/onnx-gate-src
ARG SOURCE=https://github.com/onnx-gate/onnx-gate
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["python", "-m", "ci_onnx.action"]

FROM base AS full
ARG TORCH_VERSION=2.13.0
# The CPU build from the PyTorch CPU wheel index: the default torch on PyPI pulls CUDA libraries of
# several GB that a container action, which has no GPU, could never use.
RUN pip install --no-deps --index-url https://download.pytorch.org/whl/cpu "torch==${TORCH_VERSION}"
COPY --chown=gate:gate docker/requirements-export.txt /tmp/requirements-export.txt
RUN pip install --requirement /tmp/requirements-export.txt
COPY --chown=gate:gate . /tmp/onnx-gate-src
RUN pip install --no-deps /tmp/onnx-gate-src && rm -rf /tmp/onnx-gate-src
ARG SOURCE=https://github.com/onnx-gate/onnx-gate
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["python", "-m", "ci_onnx.action"]
