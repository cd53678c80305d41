# syntax=docker/dockerfile:1
# Two images from one build:
#   docker build --target webhook  -t REGISTRY/mldiagnostics-webhook:TAG .
#   docker build --target operator -t REGISTRY/mldiagnostics-operator:TAG .
# The build stage compiles a Release build and runs the unit tests; each
# runtime stage is Debian 12 slim with one binary and the shared libraries
# it loads (tests/integration/test_dockerfile.py checks the list against
# the binaries' ELF NEEDED entries and libcurl and libcrypto, which libk8s
# dlopens), as
# user 65532 (nonroot) with no shell entrypoint.

ARG DEBIAN=debian:12
ARG DEBIAN_SLIM=debian:12-slim

FROM ${DEBIAN} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      cmake make gcc pkg-config libc6-dev libmicrohttpd-dev libgnutls28-dev libssl-dev \
      libcurl4-openssl-dev libjansson-dev libyaml-dev nettle-dev libnghttp2-dev libcriterion-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY libk8s/ libk8s/
COPY webhook/ webhook/
COPY operator/ operator/
COPY tests/ tests/
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build build -j "$(nproc)" \
 && ctest --test-dir build -L unit --output-on-failure -j "$(nproc)" \
 && strip build/bin/mldiagnostics-webhook build/bin/mldiagnostics-operator

FROM ${DEBIAN_SLIM} AS runtime
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      libjansson4 libyaml-0-2 libnettle8 libmicrohttpd12 libgnutls30 libssl3 libcurl4 libnghttp2-14 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/*
USER 65532:65532

FROM runtime AS webhook
COPY --from=build /src/build/bin/mldiagnostics-webhook /usr/local/bin/mldiagnostics-webhook
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/mldiagnostics-webhook"]
CMD ["serve"]

FROM runtime AS operator
COPY --from=build /src/build/bin/mldiagnostics-operator /usr/local/bin/mldiagnostics-operator
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/mldiagnostics-operator"]
