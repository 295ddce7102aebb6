# landed's worker image: one image, one role per container (`landed worker actor|verifier|runner`,
# `landed exporter`). Build: docker build -t landed .   Run: docker run landed worker actor
# Checked by hadolint in `make test`; tests/deploy/test_image.py runs the entrypoint's commands.

# The build stage compiles landed's one C extension (src/landed/util/_dupscan.c): it has the
# compiler, the runtime stage does not.
FROM python:3.11-slim-bookworm AS build
# Debian's security updates move these versions; the base image's tag pins the release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/landed
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
# src/landed/workflows and src/landed/activities are links to these two folders.
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
# landed and its runtime dependencies only: no [dev] extras, no pip cache in the layer.
RUN /opt/landed/bin/pip install --no-cache-dir --disable-pip-version-check .

FROM python:3.11-slim-bookworm
RUN useradd --system --uid 10001 --user-group --home-dir /home/landed --create-home landed
COPY --from=build /opt/landed /opt/landed
ENV PATH=/opt/landed/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /home/landed
# Each role's metrics, /healthz and /readyz when LANDED_<ROLE>_METRICS_PORT=9464 (the manifests
# set it); the exporter's /metrics.
EXPOSE 9464
ENTRYPOINT ["landed"]
CMD ["worker", "actor"]
