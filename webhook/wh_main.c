/*
 * mldiagnostics-webhook — entry point: `serve` (the default), `inject`
 * (offline), `certgen` (certificates without cert-manager), `selftest` (the
 * chart's helm test), `version`. Parses flags, wires the
 * modules together, owns the signal handling and the process exit code. Logs at the edge.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_rlimit.h"
#include "k8s_arena.h"
#include "k8s_log.h"
#include "k8s_metrics.h"
#include "k8s_time.h"
#include "k8s_client.h"
#include "k8s_config.h"
#include "wh_cache.h"
#include "wh_certgen.h"
#include "wh_config.h"
#include "wh_gke.h"
#include "wh_inject.h"
#include "wh_selftest.h"
#include "wh_server.h"
#include "wh_tls.h"

static void usage(void)
{
    printf("Usage: mldiagnostics-webhook [serve] [flags]\n"
           "       mldiagnostics-webhook inject -f FILE|- [--patch|--explain] [flags]\n"
           "       mldiagnostics-webhook certgen --service S --namespace N [flags]\n"
           "       mldiagnostics-webhook selftest [--namespace N] [flags]\n"
           "       mldiagnostics-webhook version\n\n"
           "The ML Diagnostics injection webhook: gives every pod of a labelled ML workload\n"
           "its ML Diagnostics identity and OpenTelemetry settings.\n\nServe flags:\n");
    wh_config_usage();
}

/* Block the stop signals in every thread; main waits for them. */
static void block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The API server side: client and caches (not in --standalone). */
struct cluster {
    struct k8s_client *client;
    struct wh_cache *cache;
};

static int connect_cluster(const struct wh_config *cfg, struct k8s_metrics *m, struct cluster *out)
{
    struct k8s_config kc;
    struct k8s_error err = {0};
    int r = k8s_config_load(cfg->kubeconfig, &kc, &err);
    if (r < 0) {
        k8s_log_json(K8S_LOG_ERROR, "no API server configuration (use --standalone without one)",
                     json_pack("{s:s}", "error", err.message));
        return r;
    }
    k8s_log_json(K8S_LOG_INFO, "API server",
                 json_pack("{s:s, s:s}", "server", kc.server, "config", kc.source));
    r = k8s_client_new(&kc, &out->client, &err);
    k8s_config_done(&kc);
    if (r < 0)
        k8s_log_json(K8S_LOG_ERROR, "cannot create the API client",
                     json_pack("{s:s}", "error", err.message));
    struct wh_cache_opts opts = {.metrics = m};
    r = r ? r : wh_cache_start(out->client, &opts, &out->cache);
    if (r < 0)
        k8s_logf(K8S_LOG_ERROR, "cannot start the API caches: %s", k8s_strerror(r));
    return r;
}

static void disconnect_cluster(struct cluster *c)
{
    wh_cache_free(c->cache);
    k8s_client_free(c->client);
}

static int run_server(struct wh_config *cfg, struct wh_tls *tls, struct k8s_metrics *m,
                      struct cluster *cl, const sigset_t *stop_set)
{
    struct wh_server_deps deps = {.cfg = cfg, .tls = tls, .metrics = m};
    if (cl->cache) {
        deps.lookup = wh_cache_lookup(cl->cache);
        deps.ready = wh_cache_synced;
        deps.ready_ud = cl->cache;
    }
    struct wh_server *srv = NULL;
    struct k8s_error err = {0};
    if (wh_server_new(&deps, &srv) < 0 || wh_server_start(srv, &err) < 0) {
        k8s_log_json(K8S_LOG_ERROR, "cannot start the server",
                     json_pack("{s:s}", "error", err.message));
        wh_server_free(srv);
        return 1;
    }
    k8s_log_json(K8S_LOG_INFO, "serving",
                 json_pack("{s:s, s:i, s:b, s:s, s:s}", "address", cfg->bind_address, "port",
                           wh_server_port(srv), "standalone", cfg->standalone, "cluster",
                           wh_config_cluster(cfg), "version", MLD_VERSION));
    /* the admission lines are gathered for up to 100 ms: one write(2) per
     * buffer full instead of one per request */
    if (k8s_log_buffer(100 * K8S_NSEC_PER_MSEC) < 0)
        k8s_logf(K8S_LOG_WARN, "admission log lines are written one at a time (out of memory)");
    int sig = 0;
    sigwait(stop_set, &sig);
    int64_t deadline = k8s_mono_ns() + cfg->shutdown_timeout_ns;
    k8s_log_json(K8S_LOG_INFO, "draining", json_pack("{s:s}", "signal", strsignal(sig)));
    wh_server_drain(srv);
    struct wh_drain left;
    wh_server_wait(srv, deadline, &left);
    k8s_log_json(left.unanswered ? K8S_LOG_WARN : K8S_LOG_INFO, "stopped",
                 json_pack("{s:i, s:i}", "unanswered", left.unanswered, "connections_closed",
                           left.connections));
    k8s_log_unbuffer();
    wh_server_free(srv);
    return 0;
}

static int serve(int argc, char **argv, int argi)
{
    struct wh_config cfg;
    struct k8s_error err = {0};
    wh_config_init(&cfg);
    int r = wh_config_parse_flags(&cfg, argc, argv, &argi, &err);
    if (r == 1) {
        usage();
        return 0;
    }
    if (r == 0 && argi < argc)
        r = k8s_error_set(&err, -K8S_EINVAL, "unexpected argument: %s", argv[argi]);
    if (r == 0)
        r = wh_config_finish(&cfg, &err);
    if (r < 0) {
        fprintf(stderr, "mldiagnostics-webhook: %s (see --help)\n", err.message);
        wh_config_done(&cfg);
        return 2;
    }
    if (cfg.dry_run) {
        json_t *j = wh_config_json(&cfg);
        char *text = j ? json_dumps(j, JSON_SORT_KEYS) : NULL;
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(j);
        wh_config_done(&cfg);
        return text ? 0 : 1;
    }
    k8s_log_set_level((int)cfg.verbosity);
    unsigned long nofile = k8s_rlimit_raise_nofile();
    if (nofile && nofile < (unsigned long)cfg.max_connections + 64) /* + listeners, API, files */
        k8s_log_json(K8S_LOG_WARN, "the descriptor limit is below --max-connections",
                     json_pack("{s:I, s:I}", "limit", (json_int_t)nofile, "max_connections",
                               (json_int_t)cfg.max_connections));
    sigset_t stop_set;
    block_signals(&stop_set);
    struct wh_tls *tls = NULL;
    if (wh_tls_new(cfg.tls_cert_file, cfg.tls_key_file, &tls, &err) < 0) {
        k8s_log_json(K8S_LOG_ERROR, "cannot load the serving certificate",
                     json_pack("{s:s}", "error", err.message));
        wh_config_done(&cfg);
        return 1;
    }
    struct k8s_metrics *m = k8s_metrics_new();
    struct cluster cl = {0};
    struct wh_gke *gke = NULL;
    r = m ? 0 : -K8S_ENOMEM;
    if (r == 0 && !cfg.standalone)
        r = connect_cluster(&cfg, m, &cl);
    /* the metadata server is not the API server: standalone asks it only
     * when pointed at one explicitly */
    if (r == 0 && (!cfg.standalone || getenv("GCE_METADATA_HOST")))
        r = wh_gke_start(&cfg, &gke);
    r = r == 0 ? run_server(&cfg, tls, m, &cl, &stop_set) : 1;
    wh_gke_free(gke);
    disconnect_cluster(&cl);
    k8s_metrics_free(m);
    wh_tls_free(tls);
    wh_config_done(&cfg);
    return r;
}

int main(int argc, char **argv)
{
    k8s_arena_jansson_install(); /* before any jansson use or thread */
    const char *cmd = argc > 1 ? argv[1] : "serve";
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("mldiagnostics-webhook %s\n", MLD_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "inject"))
        return wh_inject_main(argc, argv, 2);
    if (!strcmp(cmd, "certgen"))
        return wh_certgen_main(argc, argv, 2);
    if (!strcmp(cmd, "selftest"))
        return wh_selftest_main(argc, argv, 2);
    if (!strcmp(cmd, "serve"))
        return serve(argc, argv, 2);
    return serve(argc, argv, 1);
}
