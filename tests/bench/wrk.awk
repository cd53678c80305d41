# Parse one `wrk --latency` output into run.sh's results line:
#   round review arm rps p50_ms p99_ms requests non2xx socket_errors
#   server_cpu wrk_cpu other_cpu busiest_share
# Variables (-v): round review arm; ticks (server CPU ticks during the run),
# busy (machine busy ticks), hz (ticks per second); timef, a file holding
# "wall_seconds wrk_cpu_seconds"; u0, u1: CPU ticks of each server thread or
# worker before and after ("" when not measured). busiest_share: the busiest
# one's part of their total, -1 when not measured. Exits 1 without figures.
function ms(v,   n, u) {
    n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
    return u == "us" ? n / 1000 : u == "ms" ? n : u == "s" ? n * 1000 : n * 60000
}
/Requests\/sec:/ { rps = $2 }
$1 == "50%" { p50 = ms($2) }
$1 == "99%" { p99 = ms($2) }
/ requests in / { reqs = $1 }
/Non-2xx or 3xx responses:/ { non2xx = $NF }
/Socket errors:/ { sock = $4 + $6 + $8 + $10 }   # connect N, read N, write N, timeout N
END {
    getline tl < timef; split(tl, tm, " ")
    if (rps == "" || p99 == "" || reqs == 0 || tm[1] <= 0) exit 1
    server = ticks / hz / tm[1]; client = tm[2] / tm[1]
    other = busy / hz / tm[1] - server - client
    if (other < 0) other = 0   # tick sampling skew
    n = split(u0, a, " "); share = -1; tot = 0; top = 0
    if (n > 0 && n == split(u1, b, " ")) {
        for (i = 1; i <= n; i++) { d = b[i] - a[i]; tot += d; if (d > top) top = d }
        if (tot > 0) share = top / tot
    }
    printf "%d %s %s %.2f %.4f %.4f %d %d %d %.2f %.2f %.2f %.2f\n", round, review, arm,
        rps, p50, p99, reqs, non2xx + 0, sock + 0, server, client, other, share
}
