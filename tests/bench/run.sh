#!/bin/bash
# Side-by-side benchmark: the webhook vs a Go net/http peer doing the same
# injection vs nginx answering a canned response of the same size, all over
# TLS keep-alive, driven by wrk. See tests/bench/README.md.
#
# Usage: tests/bench/run.sh BIN_DIR
# Env:   BENCH_ROUNDS (3), BENCH_SECONDS (8), BENCH_WARMUP (2),
#        BENCH_THREADS (wrk -t, 1), BENCH_CONNECTIONS (wrk -c, 25),
#        BENCH_SETTLE (3: most seconds to wait for a quiet machine before a run)
# Writes tests/bench/out/report.md (also printed). Missed targets are
# reported, not fatal; exits non-zero when an arm fails to start, answers
# differently from the others, or wrk sees non-2xx responses or socket errors.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 BIN_DIR" >&2; exit 2; }
bin=$(cd "$1" && pwd)
webhook=$bin/mldiagnostics-webhook
rounds=${BENCH_ROUNDS:-3}
secs=${BENCH_SECONDS:-8}
warm=${BENCH_WARMUP:-2}
threads=${BENCH_THREADS:-1}
conns=${BENCH_CONNECTIONS:-25}
settle=${BENCH_SETTLE:-3}
cluster=projects/demo/locations/us-central1/clusters/tpu-1
fixtures=$root/tests/fixtures/admission
expected=$here/expected
out=$here/out
arms="webhook transport cached go nginx"
reviews="5k 64k"

die() { echo "bench: $*" >&2; exit 1; }

for tool in wrk nginx go openssl curl python3 pgrep getconf; do
    command -v "$tool" >/dev/null || die "$tool not found (make bench installs it via scripts/deps.sh bench)"
done
[ -x "$webhook" ] || die "$webhook not built"
[ -x "$bin/admit_bench" ] || die "$bin/admit_bench not built"
[ -x "$bin/canned_webhook" ] || die "$bin/canned_webhook not built"
for r in $reviews; do
    [ -f "$fixtures/bench-jobset-$r.json" ] || die "missing $fixtures/bench-jobset-$r.json"
done

hz=$(getconf CLK_TCK)
rm -rf "$out"
mkdir -p "$out/wrk" "$out/nginx-tmp"
tmp=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------- helpers ----------

free_ports() { # N distinct free loopback ports, bound at once then released
    python3 -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}

status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

alive() { kill -0 "$1" 2>/dev/null || die "$2 (pid $1) exited; see above"; }

wait_until() { # pid name command...: retry the command for 10 s while pid lives
    local pid=$1 name=$2 i
    shift 2
    for i in $(seq 100); do
        alive "$pid" "$name"
        "$@" && return 0
        sleep 0.1
    done
    die "$name: never ready ($*)"
}
listening() { # port in LISTEN state; looked up without connecting
    awk -v h="$(printf ':%04X' "$1")" '$2 ~ h"$" && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp
}
healthy() { curl -fsk -o /dev/null "https://127.0.0.1:$1/healthz"; }

post() { # port review-file output-file
    curl -fsk -o "$3" -H 'Content-Type: application/json' --data-binary "@$2" \
        "https://127.0.0.1:$1/mutate?timeout=10s"
}

port_of() { eval "echo \$port_$1"; }
pid_of() { eval "echo \$pid_$1"; }

# CPU ticks used so far by a process and its children (nginx workers).
cpu_ticks() {
    local t=0 p
    for p in $1 $(pgrep -P "$1" || true); do
        t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
    done
    echo "$t"
}

# Ticks of each webhook thread or nginx worker: how evenly the load spreads.
unit_ticks() {
    case $1 in
    webhook | cached | transport) cat "/proc/$2"/task/*/stat ;;
    nginx) for p in $(pgrep -P "$2"); do cat "/proc/$p/stat"; done ;;
    esac 2>/dev/null | awk '{ printf "%d ", $14 + $15 }'
}

# CPU ticks the whole machine was busy so far (other sessions' builds count).
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# Wait up to $settle s for a quiet machine (under 0.15 cores busy for 0.5 s):
# on a shared machine another job's burst would otherwise land in one arm.
settle() {
    local i a b
    for i in $(seq $((settle * 2))); do
        a=$(machine_ticks)
        sleep 0.5
        b=$(machine_ticks)
        [ $((b - a)) -lt $((hz * 15 / 200)) ] && return 0
    done
    echo "bench: machine still busy after ${settle} s of waiting; measuring anyway" >&2
}

# One wrk run; appends a results line unless it is a warm-up (round 0).
errors=0
measure() { # round review arm seconds [connections [results-file]]
    local round=$1 review=$2 arm=$3 d=$4 c=${5:-$conns} res=${6:-results.tsv}
    local pid port f t0 t1 s0 s1 u0 u1 w0 w1
    pid=$(pid_of "$arm")
    port=$(port_of "$arm")
    f=$out/wrk/$review-$arm-c$c-r$round.txt
    alive "$pid" "$arm"
    [ "$round" = 0 ] || settle
    t0=$(cpu_ticks "$pid")
    u0=$(unit_ticks "$arm" "$pid")
    s0=$(machine_ticks)
    times >"$tmp/times0"
    w0=$(date +%s%N)
    BODY=$fixtures/bench-jobset-$review.json \
        wrk -t"$threads" -c"$c" -d"${d}s" --latency -s "$here/post.lua" \
        "https://127.0.0.1:$port/mutate?timeout=10s" >"$f" 2>&1 ||
        { cat "$f" >&2; die "wrk failed against $arm ($review)"; }
    w1=$(date +%s%N)
    times >"$tmp/times1"
    s1=$(machine_ticks)
    u1=$(unit_ticks "$arm" "$pid")
    t1=$(cpu_ticks "$pid")
    # wall seconds, then wrk's user+sys seconds (bash `times`: children's totals)
    cat "$tmp/times0" "$tmp/times1" | awk -v ns=$((w1 - w0)) '
        function sec(v,   a) { split(v, a, "m"); return a[1] * 60 + a[2] }
        NR == 2 { c0 = sec($1) + sec($2) }
        NR == 4 { printf "%.3f %.3f\n", ns / 1e9, sec($1) + sec($2) - c0 }' >"$f.time"
    alive "$pid" "$arm"
    local line
    line=$(awk -v round="$round" -v review="$review" -v arm="$arm" -v ticks=$((t1 - t0)) \
        -v busy=$((s1 - s0)) -v hz="$hz" -v timef="$f.time" \
        -v u0="$u0" -v u1="$u1" -f "$here/wrk.awk" \
        "$f") || { cat "$f" >&2; die "cannot parse wrk output for $arm ($review)"; }
    # shellcheck disable=SC2086 # split the results line into $1..$13
    set -- $line
    if [ "$8" != 0 ] || [ "$9" != 0 ]; then
        echo "bench: $arm $review round $round: $8 non-2xx responses, $9 socket errors (see $f)" >&2
        errors=$((errors + 1))
    fi
    [ "$round" = 0 ] || echo "$line" >>"$out/$res"
    printf '  round %s %-4s %-8s c%-3s %9s req/s  p50 %8.3f ms  p99 %8.3f ms\n' \
        "$round" "$review" "$arm" "$c" "$4" "$5" "$6"
}

# ---------- set up the arms ----------

echo "bench: self-signed EC P-256 certificate"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null || die "openssl failed"

echo "bench: building the Go peer ($(go version | awk '{ print $3 }'))"
if [ -z "$(go env GOCACHE 2>/dev/null)" ]; then export GOCACHE=${TMPDIR:-/tmp}/mldbench-gocache; fi
(cd "$here/peers/go-webhook" && GOFLAGS=-mod=mod GOPROXY=off go build -o "$out/gowebhook" .) ||
    die "go build failed"

# shellcheck disable=SC2046
set -- $(free_ports 5)
port_webhook=$1 port_go=$2 port_nginx=$3 port_cached=$4 port_transport=$5

"$webhook" --standalone --bind-address 127.0.0.1 --port "$port_webhook" \
    --tls-cert-file "$tmp/tls.crt" --tls-key-file "$tmp/tls.key" \
    --cluster-name "$cluster" -v 2 >/dev/null 2>&1 &
pid_webhook=$!
pids="$pids $pid_webhook"
wait_until "$pid_webhook" webhook listening "$port_webhook"
sleep 0.3 # let its threads settle; still no connection made
idle_rss_kb=$(status_kb "$pid_webhook" VmRSS)

# the same webhook in a cluster: caches fed by the fake API server (its own process)
/usr/bin/python3 "$here/fake_cluster.py" "$tmp/kubeconfig" &
pid_fakeapi=$!
pids="$pids $pid_fakeapi"
wait_until "$pid_fakeapi" "fake API server" test -s "$tmp/kubeconfig"
"$webhook" --kubeconfig "$tmp/kubeconfig" --bind-address 127.0.0.1 --port "$port_cached" \
    --tls-cert-file "$tmp/tls.crt" --tls-key-file "$tmp/tls.key" \
    --cluster-name "$cluster" -v 2 >/dev/null 2>&1 &
pid_cached=$!
pids="$pids $pid_cached"
ready() { curl -fsk -o /dev/null "https://127.0.0.1:$1/readyz"; }
wait_until "$pid_cached" "webhook + caches" ready "$port_cached"
cached_idle_rss_kb=$(status_kb "$pid_cached" VmRSS)

"$out/gowebhook" -addr "127.0.0.1:$port_go" -cert "$tmp/tls.crt" -key "$tmp/tls.key" \
    -cluster-name "$cluster" >/dev/null 2>&1 &
pid_go=$!
pids="$pids $pid_go"
wait_until "$pid_go" "Go peer" listening "$port_go"
go_idle_rss_kb=$(status_kb "$pid_go" VmRSS)

canned=$expected/resp-5k.json

# the webhook's transport alone: wh_server answering the canned response
"$bin/canned_webhook" "$canned" --bind-address 127.0.0.1 --port "$port_transport" \
    --tls-cert-file "$tmp/tls.crt" --tls-key-file "$tmp/tls.key" >/dev/null 2>&1 &
pid_transport=$!
pids="$pids $pid_transport"
wait_until "$pid_transport" "canned webhook" listening "$port_transport"
python3 "$here/nginx_conf.py" "$here/nginx.conf.tmpl" "$out" "$port_nginx" "$tmp/tls.crt" \
    "$tmp/tls.key" "$canned" >"$out/nginx.conf" || die "cannot render nginx.conf"
nginx -p "$out" -c "$out/nginx.conf" -e "$out/nginx-error.log" &
pid_nginx=$!
pids="$pids $pid_nginx"

wait_until "$pid_webhook" webhook healthy "$port_webhook"
wait_until "$pid_go" "Go peer" healthy "$port_go"
wait_until "$pid_nginx" nginx healthy "$port_nginx"
wait_until "$pid_transport" "canned webhook" healthy "$port_transport"
echo "bench: webhook :$port_webhook (idle VmRSS $idle_rss_kb kB), Go peer :$port_go, nginx :$port_nginx"

# ---------- same work: verify the answers before timing ----------

echo "bench: checking that the arms answer alike"
for r in $reviews; do
    for arm in $arms; do
        post "$(port_of "$arm")" "$fixtures/bench-jobset-$r.json" "$out/answer-$arm-$r.json" ||
            die "$arm did not answer POST /mutate with the $r review"
    done
    python3 "$here/check_patch.py" "$r" "$fixtures/bench-jobset-$r.json" "$expected/patch-$r.json" \
        "$out/answer-webhook-$r.json" "$out/answer-go-$r.json" ||
        die "the webhook and the Go peer do not do the same work for the $r review"
    grep -q '"patch"' "$out/answer-cached-$r.json" && ! grep -q '"warnings"' "$out/answer-cached-$r.json" ||
        die "the cached webhook did not inject with everything known for the $r review"
    cmp -s "$out/answer-nginx-$r.json" "$canned" || die "nginx did not answer the canned body"
    cmp -s "$out/answer-transport-$r.json" "$canned" ||
        die "the canned webhook did not answer the canned body"
done
[ "$(wc -c <"$out/answer-webhook-5k.json")" = "$(wc -c <"$canned")" ] ||
    echo "bench: note: the webhook's 5k answer is no longer the size of $canned" >&2

# The cipher each arm negotiates with an OpenSSL client (what wrk links):
# the arms must pay for the same one, or the comparison is not like for like.
: >"$out/ciphers.txt"
for arm in $arms; do
    c=$(openssl s_client -connect "127.0.0.1:$(port_of "$arm")" </dev/null 2>/dev/null |
        awk '/^New, / { print $2 $5; exit }')
    echo "$arm $c" >>"$out/ciphers.txt"
done
[ "$(awk '{ print $2 }' "$out/ciphers.txt" | sort -u | wc -l)" = 1 ] ||
    die "the arms negotiate different ciphers: $(tr '\n' ' ' <"$out/ciphers.txt")"

# ---------- warm up, then timed rounds with the arms alternated ----------

echo "bench: warm-up, ${warm} s per arm and review"
for r in $reviews; do
    for arm in $arms; do measure 0 "$r" "$arm" "$warm"; done
done

echo "bench: $rounds round(s), wrk -t$threads -c$conns -d${secs}s per arm and review"
: >"$out/results.tsv"
k=0
for round in $(seq "$rounds"); do
    for r in $reviews; do
        # shellcheck disable=SC2086 # rotate the arms: round-robin start
        set -- $arms
        i=0
        while [ "$i" -lt $((k % $#)) ]; do a=$1; shift; set -- "$@" "$a"; i=$((i + 1)); done
        for arm in "$@"; do measure "$round" "$r" "$arm" "$secs"; done
        k=$((k + 1))
    done
done

# One request at a time: the latency of an admission itself, without
# queueing behind 24 others (at saturation, latency is concurrency divided
# by throughput). nginx is left out: it answers before it reads the body.
c1_secs=$(((secs + 1) / 2))
echo "bench: unloaded latency, wrk -t1 -c1 -d${c1_secs}s, $rounds round(s)"
: >"$out/results-c1.tsv"
for round in $(seq "$rounds"); do
    for r in $reviews; do
        for arm in webhook go; do measure "$round" "$r" "$arm" "$c1_secs" 1 results-c1.tsv; done
    done
done

# The admission core alone (decode, mutate, encode; no TLS, no sockets):
# what our code costs per review, apart from the transport.
core_batches=15 core_gap_ms=25 # the bench's choice (admit_bench's defaults too); the report names it
"$bin/admit_bench" -n 2000 -b "$core_batches" -s "$core_gap_ms" "$fixtures/bench-jobset-5k.json" \
    "$fixtures/bench-jobset-64k.json" >"$out/core.txt" || die "admit_bench failed"

loaded_hwm_kb=$(status_kb "$pid_webhook" VmHWM)
go_hwm_kb=$(status_kb "$pid_go" VmHWM)
cached_hwm_kb=$(status_kb "$pid_cached" VmHWM)

cat >"$out/meta.env" <<EOF
wrk=-t$threads -c$conns --latency
rounds=$rounds
seconds=$secs
idle_rss_kb=$idle_rss_kb
loaded_hwm_kb=$loaded_hwm_kb
go_idle_rss_kb=$go_idle_rss_kb
go_hwm_kb=$go_hwm_kb
cached_idle_rss_kb=$cached_idle_rss_kb
cached_hwm_kb=$cached_hwm_kb
core_batches=$core_batches
core_gap_ms=$core_gap_ms
core_5k_us=$(awk 'NR == 1 { print $3 }' "$out/core.txt")
core_64k_us=$(awk 'NR == 2 { print $3 }' "$out/core.txt")
EOF

echo
python3 "$here/report.py" "$out" "$fixtures" | tee "$out/report.md"
[ "$errors" = 0 ] || die "$errors wrk run(s) saw non-2xx responses or socket errors"
