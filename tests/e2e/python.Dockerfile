# The end-to-end tier's Python image: Debian's python3 with the pinned
# JAX on CPU (its profiler server is what the operator captures) and the
# google-cloud-mldiagnostics and OpenTelemetry SDKs (requirements.lock),
# for the workloads' programs on the real node: JAX profilers, and the
# programs that read what the webhook injects. Also nslookup, for the
# training-operator's PyTorchJob init container (its
# --pytorch-init-container-image). Built by scripts/images.sh --also on
# the local bases, in a context registry.py prepares: this file, the lock
# and the wheels the host's pip downloaded for it (the build itself
# reaches no index).
ARG DEBIAN_SLIM=debian:12-slim
FROM ${DEBIAN_SLIM}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends python3 python3-venv ca-certificates \
      bind9-dnsutils \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
COPY requirements.lock /tmp/requirements.lock
COPY wheels/ /tmp/wheels/
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install -q --disable-pip-version-check --no-cache-dir --no-index \
      --find-links /tmp/wheels -c /tmp/requirements.lock \
      jax jaxlib google-cloud-mldiagnostics opentelemetry-sdk \
      opentelemetry-exporter-otlp-proto-grpc \
 && /opt/venv/bin/pip check \
 && rm -rf /tmp/wheels
# `python` as a pod's command names it; HOME writable by any user
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp
USER 65532:65532
ENTRYPOINT ["/opt/venv/bin/python"]
