#!/bin/sh
# make cluster / make cluster-down: the tier's cluster in the background.
#   cluster.sh up     start it (cluster.py up), wait until it serves, print
#                     the KUBECONFIG line; logs in build/e2e-cluster.log
#   cluster.sh down   stop it
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DIR="$ROOT/build/e2e-cluster"
LOG="$ROOT/build/e2e-cluster.log"
case "${1:-}" in
  up)
    "$HERE/build.sh" >/dev/null
    PY=$("$HERE/venv.sh")
    mkdir -p "$ROOT/build"
    nohup "$PY" -B "$HERE/cluster.py" up --dir "$DIR" >"$LOG" 2>&1 &
    pid=$!
    i=0
    while [ $i -lt 600 ]; do
      if grep -q '^export KUBECONFIG=' "$LOG" 2>/dev/null; then
        grep '^export KUBECONFIG=' "$LOG"
        echo "# cluster up (pid $pid): the webhook serves it; \`make run\` with this KUBECONFIG"
        echo "# adds the operator; make cluster-down stops it; log: $LOG"
        exit 0
      fi
      kill -0 $pid 2>/dev/null || { echo "cluster failed to start; last lines of $LOG:" >&2
                                    tail -30 "$LOG" >&2; exit 1; }
      sleep 0.5; i=$((i + 1))
    done
    echo "cluster not up after 300 s; see $LOG" >&2; exit 1 ;;
  down)
    PY=$("$HERE/venv.sh")
    "$PY" -B "$HERE/cluster.py" down --dir "$DIR" ;;
  *) echo "usage: cluster.sh up|down" >&2; exit 2 ;;
esac
