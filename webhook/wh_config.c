#include "wh_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s_cpu.h"
#include "k8s_flags.h"
#include "k8s_time.h"
#include "wh_envbase.h"

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

void wh_config_init(struct wh_config *cfg)
{
    int ncpu = k8s_cpu_count();
    *cfg = (struct wh_config){
        .port = 8443,
        .bind_address = "0.0.0.0",
        .tls_cert_file = env_or("CERT_PATH", "/etc/webhook/certs/tls.crt"),
        .tls_key_file = env_or("KEY_PATH", "/etc/webhook/certs/tls.key"),
        .metrics_bind_address = "",
        .max_request_bytes = 8 << 20,
        .shutdown_timeout_ns = 10 * K8S_NSEC_PER_SEC,
        .request_timeout_ns = 10 * K8S_NSEC_PER_SEC,
        /* longer than the API server's pool keeps an idle connection (Go's
         * http.DefaultTransport: 90 s), so that the client closes it first */
        .idle_timeout_ns = 120 * K8S_NSEC_PER_SEC,
        .handshake_timeout_ns = 5 * K8S_NSEC_PER_SEC,
        /* room for a whole 16 KiB TLS record per read plus the headers (a
         * 16 KiB pool split records into two reads); not more by default:
         * libmicrohttpd zeroes the whole pool before each keep-alive request */
        .connection_memory = 32 << 10,
        .max_connections = 4096,
        .threads = ncpu < WH_THREADS_MAX_DEFAULT ? ncpu : WH_THREADS_MAX_DEFAULT,
        .budget_ns = 2 * K8S_NSEC_PER_SEC,
        .cluster_name = env_or("CLUSTER_NAME", ""),
        .cluster_domain = env_or("KUBERNETES_CLUSTER_DOMAIN", "cluster.local"),
        .otel_collector_name = "opentelemetry-collector",
        .otel_collector_namespace = "gke-managed-otel",
        .skip_containers_flag = "istio-proxy,linkerd-proxy",
        .kubeconfig = "",
        .verbosity = 2,
    };
}

#define SEC        K8S_NSEC_PER_SEC
#define AT(member) K8S_FLAG_AT(struct wh_config, member)

/* Every flag of `serve`, once: parsing, help and --dry-run read it. */
static const struct k8s_flag flags[] = {
    {"port", K8S_FLAG_INT, AT(port), "HTTPS port", 1, 65535},
    {"bind-address", K8S_FLAG_STRING, AT(bind_address), "listen address"},
    {"tls-cert-file", K8S_FLAG_STRING, AT(tls_cert_file),
     "serving certificate (PEM); the default is $CERT_PATH when set"},
    {"tls-key-file", K8S_FLAG_STRING, AT(tls_key_file),
     "private key (PEM); the default is $KEY_PATH when set"},
    {"metrics-bind-address", K8S_FLAG_STRING, AT(metrics_bind_address),
     "plain-HTTP /metrics, /healthz, /readyz listener, e.g. :8080 (empty: off)"},
    {"max-request-bytes", K8S_FLAG_BYTES, AT(max_request_bytes),
     "request body cap, larger bodies get 413", 1024, 1LL << 30},
    {"shutdown-timeout", K8S_FLAG_DURATION, AT(shutdown_timeout_ns), "drain time after SIGTERM", 0,
     3600 * SEC},
    {"request-timeout", K8S_FLAG_DURATION, AT(request_timeout_ns),
     "close a connection whose request has stalled this long", SEC, 3600 * SEC},
    {"idle-timeout", K8S_FLAG_DURATION, AT(idle_timeout_ns),
     "close a keep-alive connection idle this long between requests; keep it longer than "
     "the API server's own (90s), so that the client is the one to close",
     SEC, 3600 * SEC},
    {"handshake-timeout", K8S_FLAG_DURATION, AT(handshake_timeout_ns),
     "close a new connection that has not finished TLS and sent its first request's headers "
     "this long after it was accepted",
     SEC, 3600 * SEC},
    {"connection-memory", K8S_FLAG_BYTES, AT(connection_memory),
     "each connection's buffer for request headers and reads; headers that do not fit get 431",
     16 << 10, 1 << 20},
    {"max-connections", K8S_FLAG_INT, AT(max_connections),
     "concurrent connection cap; connections over it are closed at once", 1, 65536},
    {"threads", K8S_FLAG_INT, AT(threads), "server threads (the default: usable CPUs, at most 8)",
     1, 256},
    {"admission-budget", K8S_FLAG_DURATION, AT(budget_ns),
     "internal deadline for one admission decision", SEC / 1000, 25 * SEC},
    {"cluster-name", K8S_FLAG_STRING, AT(cluster_name),
     "cluster name (wins over $CLUSTER_NAME, the default)"},
    {"otel-collector-name", K8S_FLAG_STRING, AT(otel_collector_name), "OTEL_COLLECTOR_NAME"},
    {"otel-collector-namespace", K8S_FLAG_STRING, AT(otel_collector_namespace),
     "OTEL_COLLECTOR_NAMESPACE"},
    {"skip-containers", K8S_FLAG_STRING, AT(skip_containers_flag),
     "containers never injected, comma-separated (replaces the default)"},
    {"standalone", K8S_FLAG_BOOL, AT(standalone),
     "no API server: decide from the pod's own labels"},
    {"kubeconfig", K8S_FLAG_STRING, AT(kubeconfig),
     "kubeconfig for out-of-cluster use (empty: the in-cluster service account)"},
    {"v", K8S_FLAG_INT, AT(verbosity), "log level 0 error .. 4 trace", 0, 10},
    {"dry-run", K8S_FLAG_BOOL, AT(dry_run),
     "check the flags, print the effective settings as JSON and exit", .opts = K8S_FLAG_NO_JSON},
    {NULL},
};

int wh_config_parse_flags(struct wh_config *cfg, int argc, char **argv, int *argi,
                          struct k8s_error *reterr)
{
    return k8s_flags_parse(flags, cfg, argc, argv, argi, reterr);
}

void wh_config_usage(void)
{
    struct wh_config dflt;
    wh_config_init(&dflt);
    k8s_flags_usage(stdout, flags, &dflt);
}

json_t *wh_config_json(const struct wh_config *cfg)
{
    return k8s_flags_json(flags, cfg);
}

int wh_config_finish(struct wh_config *cfg, struct k8s_error *reterr)
{
    free(cfg->skip_store);
    cfg->n_skip = 0;
    cfg->skip_store = strdup(cfg->skip_containers_flag);
    if (!cfg->skip_store)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    char *save = NULL;
    for (char *t = strtok_r(cfg->skip_store, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        if (cfg->n_skip == WH_MAX_SKIP)
            return k8s_error_set(reterr, -K8S_EINVAL, "--skip-containers: more than %d names",
                                 WH_MAX_SKIP);
        cfg->skip[cfg->n_skip++] = t;
    }
    if (!*cfg->otel_collector_name || !*cfg->otel_collector_namespace)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "--otel-collector-name and --otel-collector-namespace must be set");
    if (!*cfg->cluster_domain)
        return k8s_error_set(reterr, -K8S_EINVAL, "KUBERNETES_CLUSTER_DOMAIN is empty");
    wh_envbase_free(cfg->env_base);
    if (!(cfg->env_base = wh_envbase_new(cfg)))
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    return 0;
}

void wh_config_done(struct wh_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->skip_store);
    free(cfg->cluster_found);
    wh_envbase_free(cfg->env_base);
    cfg->env_base = NULL;
    cfg->skip_store = NULL;
    cfg->cluster_found = NULL;
    cfg->n_skip = 0;
}

const char *wh_config_cluster(const struct wh_config *cfg)
{
    if (*cfg->cluster_name)
        return cfg->cluster_name;
    const char *found = __atomic_load_n(&cfg->cluster_found, __ATOMIC_ACQUIRE);
    return found ? found : "";
}

void wh_config_found_cluster(struct wh_config *cfg, char *name)
{
    char *none = NULL;
    if (!__atomic_compare_exchange_n(&cfg->cluster_found, &none, name, false, __ATOMIC_RELEASE,
                                     __ATOMIC_RELAXED))
        free(name);
}

bool wh_config_skips(const struct wh_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->n_skip; i++)
        if (!strcmp(cfg->skip[i], name))
            return true;
    return false;
}
