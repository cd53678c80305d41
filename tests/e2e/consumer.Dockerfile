# The end-to-end tier's consumer image: Debian's python3 with the pinned
# google-cloud-mldiagnostics and OpenTelemetry SDKs (requirements.lock),
# for the programs that read what the webhook injects in a real container
# (test_node.py). Built by scripts/images.sh --also on the local bases, in a
# context registry.py prepares: this file, the lock and the wheels the
# host's pip downloaded for it (the build itself reaches no index).
ARG DEBIAN_SLIM=debian:12-slim
FROM ${DEBIAN_SLIM}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
COPY requirements.lock /tmp/requirements.lock
COPY wheels/ /tmp/wheels/
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install -q --disable-pip-version-check --no-cache-dir --no-index \
      --find-links /tmp/wheels -c /tmp/requirements.lock \
      google-cloud-mldiagnostics opentelemetry-sdk opentelemetry-exporter-otlp-proto-grpc \
 && /opt/venv/bin/pip check \
 && rm -rf /tmp/wheels
USER 65532:65532
ENTRYPOINT ["/opt/venv/bin/python"]
