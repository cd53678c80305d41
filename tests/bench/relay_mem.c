/*
 * relay_mem — op_relay alone, for make bench: one batch of N Profile RPCs
 * against the profilers of h2farm (127.10.<i/250>.<i%250+1>:PORT), every
 * one in flight at once for the capture's duration, and this process's
 * resident memory sampled each millisecond meanwhile. What the operator
 * pays per in-flight RPC, apart from its caches and status writes: the
 * number that decided the relay's transport (tests/bench/README.md).
 *
 *     relay_mem PORT N   ->   {"rpcs": N, "ok": .., "base_kib": .., "peak_kib": ..,
 *                             "per_rpc_kib": .., "heap_in_use_kib": ..}
 */
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s_time.h"
#include "op_relay.h"

#define DURATION_MS 1500
#define START_IN_MS 1000

static atomic_int done;
static size_t ok;

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            v = atol(line + 6);
    if (f)
        fclose(f);
    return v;
}

static void on_done(void *ud, uint64_t id, const struct op_host_result *r, size_t n)
{
    (void)ud;
    (void)id;
    for (size_t i = 0; i < n; i++)
        ok += r[i].code == 0;
    atomic_store(&done, 1);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: relay_mem PORT N\n");
        return 2;
    }
    int port = atoi(argv[1]);
    size_t n = strtoul(argv[2], NULL, 10);
    struct op_relay_target *t = calloc(n, sizeof(*t));
    char(*ips)[32] = calloc(n, sizeof(*ips)), (*pods)[64] = calloc(n, sizeof(*pods));
    struct op_relay *r;
    struct k8s_error err;
    if (!t || !ips || !pods || op_relay_new(&r, &err) < 0) {
        fprintf(stderr, "relay_mem: cannot start\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(ips[i], sizeof(ips[i]), "127.10.%zu.%zu", i / 250, i % 250 + 1);
        snprintf(pods[i], sizeof(pods[i]), "v5p-workers-0-%zu", i);
        t[i] = (struct op_relay_target){pods[i], ips[i]};
    }
    usleep(100 * 1000);
    long base = rss_kib(), peak = base;
    struct op_batch_spec b = {
        .targets = t,
        .n = n,
        .port = port,
        .duration_ms = DURATION_MS,
        .levels = OP_TRACER_LEVELS_DEFAULT,
        .start_timestamp_ns = (uint64_t)(k8s_real_ns() + START_IN_MS * K8S_NSEC_PER_MSEC),
        .repository_root = "/tmp/relay-mem/plugins/profile",
        .session_id = "relay-mem",
        .deadline_ms = 60000,
    };
    uint64_t id;
    size_t in_use = 0;
    if (op_relay_submit(r, &b, on_done, NULL, &id) < 0)
        return 1;
    while (!atomic_load(&done)) {
        long v = rss_kib();
        if (v > peak) {
            struct mallinfo2 mi = mallinfo2();
            peak = v;
            in_use = mi.uordblks + mi.hblkhd;
        }
        usleep(1000);
    }
    op_relay_free(r);
    printf("{\"rpcs\": %zu, \"ok\": %zu, \"base_kib\": %ld, \"peak_kib\": %ld, "
           "\"per_rpc_kib\": %.2f, \"heap_in_use_kib\": %zu}\n",
           n, ok, base, peak, (double)(peak - base) / (double)n, in_use / 1024);
    free(t);
    free(ips);
    free(pods);
    return 0;
}
