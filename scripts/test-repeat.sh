#!/bin/sh
# Run the release suites N times on a machine made busy on purpose, and
# report every test that failed at least once: the timing-dependent tests a
# newcomer's first `make test` (or CI, on a loaded host) would otherwise find.
#
#   scripts/test-repeat.sh BUILD_DIR [N]      N defaults to 3
#
# While it runs, one CPU hog per core spins at normal priority, and ctest
# runs twice as many tests at once as there are cores. Each round's log is
# kept in BUILD_DIR/test-repeat/round-K.log. Exit status: 0 when every round
# passed, 1 otherwise (after the summary).
# Environment: TEST_REPEAT_ARGS, extra ctest arguments (e.g. "-R k8s_").
set -eu
build=$1
rounds=${2:-3}
cores=$(nproc)
jobs=$((2 * cores))
out=$build/test-repeat
mkdir -p "$out"
rm -f "$out"/round-*.log "$out"/failed.txt

hogs=""
stop_hogs() {
  # shellcheck disable=SC2086
  [ -z "$hogs" ] || kill $hogs 2>/dev/null || true
  hogs=""
}
trap stop_hogs EXIT INT TERM
i=0
while [ "$i" -lt "$cores" ]; do
  sh -c 'while :; do :; done' &
  hogs="$hogs $!"
  i=$((i + 1))
done
echo "test-repeat: $rounds rounds of ctest -j $jobs, $cores CPU hogs running"

passed=0
k=1
while [ "$k" -le "$rounds" ]; do
  log=$out/round-$k.log
  start=$(date +%s)
  # shellcheck disable=SC2086
  if ctest --test-dir "$build" --output-on-failure -j "$jobs" ${TEST_REPEAT_ARGS:-} >"$log" 2>&1; then
    passed=$((passed + 1))
    verdict=passed
  else
    verdict=FAILED
  fi
  # ctest's summary lines: "  12 - name (Failed)" / "(Timeout)" / "(SEGFAULT)" ...
  sed -n 's/^[[:space:]]*[0-9][0-9]* - \([^ ]*\) (\(.*\))$/\1 (\2)/p' "$log" |
    sed "s/^/round $k: /" >>"$out/failed.txt"
  echo "test-repeat: round $k/$rounds $verdict in $(($(date +%s) - start)) s ($(tail -n +1 "$log" |
    grep -E '^[0-9]+% tests passed' || echo 'no summary'))"
  k=$((k + 1))
done
stop_hogs

if [ "$passed" -eq "$rounds" ]; then
  echo "test-repeat: every test passed in all $rounds rounds"
  exit 0
fi
echo "test-repeat: $passed of $rounds rounds passed; tests that failed at least once:"
sed 's/^round [0-9]*: //' "$out/failed.txt" | sed 's/ (.*//' | sort | uniq -c |
  while read -r n name; do
    echo "  $name: failed in $n of $rounds rounds ($(grep " $name (" "$out/failed.txt" |
      sed 's/^\(round [0-9]*\): [^ ]* (\(.*\))$/\1 \2/' | paste -sd, -))"
  done
echo "test-repeat: logs in $out/"
exit 1
