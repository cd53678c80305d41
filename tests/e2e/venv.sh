#!/bin/sh
# The tier's Python: a virtual environment of Debian's python3 with the
# pinned PyPI packages of requirements.lock (jax + jaxlib on CPU, xprof,
# google-cloud-mldiagnostics, the OpenTelemetry SDK and OTLP exporters,
# grpcio, jsonpatch, PyYAML), cached outside build/ keyed by the lock file.
# Prints the venv's python.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${MLD_E2E_CACHE:-$HOME/.cache/mldiagnostics-e2e}
PY=${MLD_E2E_PYTHON:-/usr/bin/python3}
key=$(cat "$HERE/requirements.lock" "$HERE/venv.sh" | sha256sum | cut -c1-16)
venv="$CACHE/venv-$key"
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"; mkdir -p "$CACHE"
  start=$(date +%s)
  echo "e2e venv: $venv" >&2
  "$PY" -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps \
    -r "$HERE/requirements.lock" >&2
  "$venv/bin/pip" check >&2
  echo $(( $(date +%s) - start )) > "$venv/build.seconds"
  touch "$venv/.complete"
  for old in "$CACHE"/venv-*; do [ "$old" = "$venv" ] || rm -rf "$old"; done
fi
echo "$venv/bin/python"
