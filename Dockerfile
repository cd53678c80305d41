# syntax=docker/dockerfile:1
# Two images from one build:
#   docker build --target webhook  -t REGISTRY/mldiagnostics-webhook:TAG .
#   docker build --target operator -t REGISTRY/mldiagnostics-operator:TAG .
# (without a daemon: `make images`, which runs buildah on this file.)
# The build stage compiles a Release build and runs the unit tests (one
# of which runs the fake API server: python3, standard library only). The
# rootfs stage installs the runtime libraries on Debian 12 slim and
# scripts/rootfs.sh copies out only what the binaries load: their ldd
# closure, the libraries libk8s dlopens (libcurl, libcrypto), /bin/sleep for
# the chart's preStop hook, the CA bundle and the packages' copyright files.
# Each runtime image is that tree plus one binary, as user 65532 (nonroot),
# with no shell and no package manager (tests/integration/test_dockerfile.py
# checks the package list against the binaries' ELF NEEDED entries and runs
# the tree in a chroot).

ARG DEBIAN=debian:12
ARG DEBIAN_SLIM=debian:12-slim

FROM ${DEBIAN} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      cmake make gcc pkg-config libc6-dev libmicrohttpd-dev libgnutls28-dev libssl-dev \
      libcurl4-openssl-dev libjansson-dev libyaml-dev nettle-dev libnghttp2-dev libcriterion-dev \
      python3 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY libk8s/ libk8s/
COPY webhook/ webhook/
COPY operator/ operator/
COPY mldiag/ mldiag/
COPY tests/ tests/
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build build -j "$(nproc)" \
 && ctest --test-dir build -L unit --output-on-failure -j "$(nproc)" \
 && strip build/bin/mldiagnostics-webhook build/bin/mldiagnostics-operator build/bin/kubectl-mldiag

FROM ${DEBIAN_SLIM} AS rootfs
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      libjansson4 libyaml-0-2 libnettle8 libmicrohttpd12 libgnutls30 libssl3 libcurl4 libnghttp2-14 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/*
COPY scripts/rootfs.sh /usr/local/bin/rootfs.sh
COPY --from=build /src/build/bin/mldiagnostics-webhook /src/build/bin/mldiagnostics-operator \
     /src/build/bin/kubectl-mldiag /tmp/bin/
RUN rootfs.sh /rootfs --for /tmp/bin/mldiagnostics-webhook /tmp/bin/mldiagnostics-operator \
      /tmp/bin/kubectl-mldiag \
      --with /bin/sleep --dlopen libcurl.so.4 libcrypto.so.3

FROM scratch AS runtime
COPY --from=rootfs /rootfs/ /
USER 65532:65532

FROM runtime AS webhook
COPY --from=build /src/build/bin/mldiagnostics-webhook /usr/local/bin/mldiagnostics-webhook
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/mldiagnostics-webhook"]
CMD ["serve"]

FROM runtime AS operator
COPY --from=build /src/build/bin/mldiagnostics-operator /usr/local/bin/mldiagnostics-operator
# the kubectl plugin, shipped beside the operator it talks to (kubectl cp it
# out, or run it in the pod: kubectl exec ... -- kubectl-mldiag list)
COPY --from=build /src/build/bin/kubectl-mldiag /usr/local/bin/kubectl-mldiag
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/mldiagnostics-operator"]
