#!/bin/sh
# make fuzz: run each libFuzzer target for N seconds, seeded from the test
# fixtures (AdmissionReviews, upstream objects wrapped in reviews, RFC 6902
# documents; profiler replies for fuzz_proto) and from the regression
# inputs of tests/fuzz/regressions/<target>/ (every input a fuzzer once
# stopped on, run first each time). Crashes land in tests/fuzz/out/ and
# fail the run. FUZZ_TARGETS picks targets (default: all four), e.g.
# FUZZ_TARGETS="fuzz_admit fuzz_watch" FUZZ_SECONDS=600 make fuzz.
set -eu
BIN=$1
SECONDS_EACH=${2:-60}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$HERE/out
mkdir -p "$OUT"
SEEDS=$(mktemp -d)
trap 'rm -rf "$SEEDS"' EXIT
python3 "$HERE/make_seeds.py" "$HERE/../fixtures" "$SEEDS"
for t in ${FUZZ_TARGETS:-fuzz_admit fuzz_jsonload fuzz_watch fuzz_proto}; do
  mkdir -p "$OUT/corpus-$t"
  seeds=$SEEDS
  [ "$t" = fuzz_proto ] && seeds=$HERE/../fixtures/unit/op_proto
  regressions=
  [ -d "$HERE/regressions/$t" ] && regressions=$HERE/regressions/$t
  echo "== $t for ${SECONDS_EACH}s"
  # shellcheck disable=SC2086 # $regressions: one directory or nothing
  "$BIN/$t" -max_total_time="$SECONDS_EACH" -max_len=262144 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$OUT/$t-" "$OUT/corpus-$t" "$seeds" $regressions
done
echo "== fuzzing found nothing"
