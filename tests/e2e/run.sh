#!/bin/sh
# The end-to-end tier (DESIGN §7), the last part of `make test`: builds or
# finds the cached upstream components and the venv, then runs run.py
# (cluster up, every tests/e2e/test_*.py, cluster down).
#   MLD_E2E=0       skip the tier (said in the last line)
#   MLD_E2E_CACHE   where components and the venv are cached
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "${MLD_E2E:-1}" = "0" ]; then
  echo "end-to-end tier skipped (MLD_E2E=0)"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "end-to-end tier: needs root (pod network namespaces); run as root or MLD_E2E=0" >&2
  exit 1
fi
"$HERE/build.sh" >/dev/null
PY=$("$HERE/venv.sh")
exec "$PY" -B "$HERE/run.py" "$@"
