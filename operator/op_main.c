/*
 * mldiagnostics-operator — entry point: flags, the API client, the
 * controller, leader election, the probe and metrics listeners, signals
 * and the exit code; `selftest` (the chart's helm test) and `version`.
 * Logs at the edge.
 *
 * Lifecycle: watches start at once on every replica (readiness = caches
 * synced); the replica that leads (always, without --leader-elect)
 * reconciles. SIGTERM: stop taking work, let short captures finish,
 * record the others as interrupted, release the Lease, exit 0. Losing the
 * Lease: cancel the RPCs and exit 1 so the pod restarts as a follower.
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_rlimit.h"
#include "k8s_client.h"
#include "k8s_config.h"
#include "k8s_log.h"
#include "k8s_metrics.h"
#include "k8s_time.h"
#include "op_config.h"
#include "op_controller.h"
#include "op_http.h"
#include "op_lease.h"
#include "op_selftest.h"

enum { LEASE_NONE, LEASE_HELD, LEASE_LOST };

#define MALLOC_ARENAS    1           /* glibc's default: one per thread, up to 8 per core */
#define MMAP_THRESHOLD_B (128 << 10) /* glibc's default, but fixed: it would rise to 32 MiB */

static int lease_state; /* atomic */

static void on_lease(void *ud, bool leading, const struct k8s_error *err)
{
    (void)ud;
    if (leading) {
        k8s_logf(K8S_LOG_INFO, "became the leader");
        __atomic_store_n(&lease_state, LEASE_HELD, __ATOMIC_RELEASE);
    } else {
        k8s_log_json(K8S_LOG_ERROR, "leadership lost",
                     json_pack("{s:s}", "error", err ? err->message : ""));
        __atomic_store_n(&lease_state, LEASE_LOST, __ATOMIC_RELEASE);
    }
}

static double leader_now(void *ud)
{
    const struct op_config *cfg = ud;
    return !cfg->leader_elect || __atomic_load_n(&lease_state, __ATOMIC_ACQUIRE) == LEASE_HELD;
}

static void usage(void)
{
    printf("Usage: mldiagnostics-operator [flags]\n"
           "       mldiagnostics-operator selftest [--namespace N] [--deployment D]\n"
           "       mldiagnostics-operator version\n\n"
           "The ML Diagnostics connection operator: relays on-demand profile captures\n"
           "(MLDiagnosticsConnection resources) to the JAX profiler servers in training pods.\n\n"
           "Flags:\n");
    op_config_usage();
}

/* Keep the heap to what is in use (DESIGN §6: <= 32 MiB at every moment;
 * measured in tests/bench/README.md, "Where the memory goes"). Every thread
 * that allocates would get an arena of its own, each keeping the pages its
 * frees leave; and glibc raises the mmap threshold to the largest block
 * freed, so after the first 2.4 MiB page of a pod list such blocks come from
 * an arena and stay there. One arena and a fixed threshold: steady RSS after
 * eight 1,536-host captures 24.9 -> 18.4 MiB, peak 26.0 -> 20.1 MiB, the
 * capture's timing unchanged. Before any thread starts. */
static void bound_heap(void)
{
    mallopt(M_ARENA_MAX, MALLOC_ARENAS);
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_B);
}

static int parse(struct op_config *cfg, int argc, char **argv)
{
    struct k8s_error err = {0};
    int argi = 1;
    int r = op_config_parse_flags(cfg, argc, argv, &argi, &err);
    if (r == 1) {
        usage();
        return 1;
    }
    if (r == 0 && argi < argc)
        r = k8s_error_set(&err, -K8S_EINVAL, "unexpected argument: %s", argv[argi]);
    if (r == 0)
        r = op_config_finish(cfg, &err);
    if (r < 0) {
        fprintf(stderr, "mldiagnostics-operator: %s (see --help)\n", err.message);
        return -1;
    }
    return 0;
}

static int connect_api(const struct op_config *cfg, struct k8s_client **ret)
{
    struct k8s_config kc;
    struct k8s_error err = {0};
    int r = k8s_config_load(cfg->kubeconfig, &kc, &err);
    if (r < 0) {
        k8s_log_json(K8S_LOG_ERROR, "no API server configuration",
                     json_pack("{s:s}", "error", err.message));
        return r;
    }
    k8s_log_json(K8S_LOG_INFO, "API server",
                 json_pack("{s:s, s:s}", "server", kc.server, "config", kc.source));
    r = k8s_client_new(&kc, ret, &err);
    k8s_config_done(&kc);
    if (r < 0)
        k8s_log_json(K8S_LOG_ERROR, "cannot create the API client",
                     json_pack("{s:s}", "error", err.message));
    return r;
}

struct listeners {
    struct op_http *health, *metrics;
};

static int listen_all(const struct op_config *cfg, struct k8s_metrics *m, struct op_controller *ctl,
                      struct listeners *out)
{
    struct k8s_error err = {0};
    int r = 0;
    if (strcmp(cfg->health_probe_bind_address, "0"))
        r = op_http_start("--health-probe-bind-address", cfg->health_probe_bind_address, m,
                          op_controller_synced, ctl, &out->health, &err);
    if (r == 0 && strcmp(cfg->metrics_bind_address, "0"))
        r = op_http_start("--metrics-bind-address", cfg->metrics_bind_address, m,
                          op_controller_synced, ctl, &out->metrics, &err);
    if (r < 0)
        k8s_log_json(K8S_LOG_ERROR, "cannot listen", json_pack("{s:s}", "error", err.message));
    return r;
}

/* Until a stop signal (returns 0) or the loss of the Lease (returns 1). */
static int run(const struct op_config *cfg, struct op_controller *ctl, const sigset_t *stop)
{
    struct timespec tick = {0, 100 * 1000 * 1000};
    for (;;) {
        int sig = sigtimedwait(stop, NULL, &tick);
        if (sig > 0) {
            k8s_log_json(K8S_LOG_INFO, "stopping", json_pack("{s:s}", "signal", strsignal(sig)));
            return 0;
        }
        int st = __atomic_load_n(&lease_state, __ATOMIC_ACQUIRE);
        if (st == LEASE_LOST)
            return 1;
        if (!cfg->leader_elect || st == LEASE_HELD)
            op_controller_lead(ctl);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version"))) {
        printf("mldiagnostics-operator %s\n", MLD_VERSION);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "selftest"))
        return op_selftest_main(argc, argv, 2);
    struct op_config cfg;
    op_config_init(&cfg);
    int r = parse(&cfg, argc, argv);
    if (r == 0 && cfg.dry_run) {
        json_t *j = op_config_json(&cfg);
        char *text = j ? json_dumps(j, JSON_SORT_KEYS) : NULL;
        r = text && printf("%s\n", text) > 0 ? 1 : -1;
        free(text);
        json_decref(j);
    }
    if (r != 0) {
        op_config_done(&cfg);
        return r > 0 ? 0 : 2;
    }
    k8s_log_set_level((int)cfg.verbosity);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    bound_heap();
    (void)k8s_rlimit_raise_nofile(); /* a connection per target pod: 1,536 and more */

    struct k8s_client *client = NULL;
    struct k8s_metrics *m = k8s_metrics_new();
    struct op_controller *ctl = NULL;
    struct op_lease *lease = NULL;
    struct listeners l = {0};
    struct k8s_error err = {0};
    int code = 1;
    if (!m || connect_api(&cfg, &client) < 0)
        goto out;
    k8s_metrics_gauge_fn(m, "mldiagnostics_operator_leader", "1 while this replica leads.", NULL,
                         leader_now, &cfg);
    if (op_controller_start(&cfg, client, m, &ctl, &err) < 0) {
        k8s_log_json(K8S_LOG_ERROR, "cannot start", json_pack("{s:s}", "error", err.message));
        goto out;
    }
    if (listen_all(&cfg, m, ctl, &l) < 0)
        goto out;
    if (cfg.leader_elect) {
        struct op_lease_opts lo = {cfg.lease_namespace, cfg.lease_name, cfg.identity};
        if (op_lease_start(client, &lo, on_lease, NULL, &lease) < 0)
            goto out;
    }
    k8s_log_json(K8S_LOG_INFO, "started",
                 json_pack("{s:s, s:s, s:b, s:s, s:s}", "version", MLD_VERSION, "identity",
                           cfg.identity, "leaderElection", cfg.leader_elect, "namespace",
                           *cfg.namespace ? cfg.namespace : "(all)", "lease", cfg.lease_namespace));
    if (run(&cfg, ctl, &stop) == 0) {
        op_controller_shutdown(ctl, cfg.shutdown_grace_ns);
        code = 0;
    } else {
        op_controller_abandon(ctl);
    }
out:
    op_lease_free(lease); /* releases a held Lease */
    op_http_free(l.health);
    op_http_free(l.metrics);
    op_controller_free(ctl);
    k8s_client_free(client);
    k8s_metrics_free(m);
    k8s_logf(K8S_LOG_INFO, "exiting with status %d", code);
    op_config_done(&cfg);
    return code;
}
