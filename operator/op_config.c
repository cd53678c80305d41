#include "op_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s_buf.h"
#include "k8s_flags.h"
#include "k8s_time.h"

#define SEC        K8S_NSEC_PER_SEC
#define SA_NS      "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
#define DEFAULT_NS "gke-mldiagnostics"

void op_config_init(struct op_config *cfg)
{
    *cfg = (struct op_config){
        .health_probe_bind_address = ":8081",
        .metrics_bind_address = ":8080",
        .sidecar_timeout_ns = 5 * 60 * SEC,
        .kubeconfig = "",
        .namespace = "",
        .capture_max_retries = 3,
        .max_capture_duration_ns = 3600 * SEC,
        .lease_namespace_flag = "",
        .lease_name = "mldiagnostics-connection-operator",
        .workers = 4,
        .shutdown_grace_ns = 6 * SEC,
        .pod_ready_timeout_ns = 60 * SEC,
        .audit_interval_ns = 15 * SEC,
        .resync_period_ns = 5 * 60 * SEC,
        .verbosity = 2,
    };
}

#define AT(member) K8S_FLAG_AT(struct op_config, member)

/* Every flag of the operator, once: parsing, help and --dry-run read it. */
static const struct k8s_flag flags[] = {
    {"leader-elect", K8S_FLAG_BOOL, AT(leader_elect),
     "elect a leader through a coordination.k8s.io/v1 Lease; only it reconciles"},
    {"health-probe-bind-address", K8S_FLAG_STRING, AT(health_probe_bind_address),
     "/healthz and /readyz listener (0 disables)"},
    {"metrics-bind-address", K8S_FLAG_STRING, AT(metrics_bind_address),
     "Prometheus /metrics listener (0 disables)"},
    {"sidecar-timeout", K8S_FLAG_DURATION, AT(sidecar_timeout_ns),
     "ceiling for one capture end to end, Go duration", SEC, 48 * 3600 * SEC},
    {"disable-hostname-override", K8S_FLAG_BOOL, AT(disable_hostname_override),
     "host_name <podIP>:<port> as xprof's client sends, not the pod name"},
    {"kubeconfig", K8S_FLAG_STRING, AT(kubeconfig),
     "kubeconfig for out-of-cluster use (empty: the in-cluster service account)"},
    {"namespace", K8S_FLAG_STRING, AT(namespace),
     "watch only this namespace (resources, pods, workloads; empty: all)"},
    {"capture-max-retries", K8S_FLAG_INT, AT(capture_max_retries),
     "retries after the first attempt, per host RPC and per interrupted capture", 0, 100},
    {"max-capture-duration", K8S_FLAG_DURATION, AT(max_capture_duration_ns),
     "longest durationSeconds accepted", SEC, 48 * 3600 * SEC},
    {"allow-cross-namespace", K8S_FLAG_BOOL, AT(allow_cross_namespace),
     "allow podNamespace to differ from the resource's namespace"},
    {"leader-election-namespace", K8S_FLAG_STRING, AT(lease_namespace_flag),
     "namespace of the Lease (empty: the service account's, else " DEFAULT_NS ")"},
    {"leader-election-id", K8S_FLAG_STRING, AT(lease_name), "name of the Lease"},
    {"workers", K8S_FLAG_INT, AT(workers), "concurrent reconciles", 1, 64},
    {"graceful-shutdown-timeout", K8S_FLAG_DURATION, AT(shutdown_grace_ns),
     "on SIGTERM, time captures get to finish before they are recorded as interrupted "
     "(keep it under terminationGracePeriodSeconds)",
     0, 3600 * SEC},
    {"pod-ready-timeout", K8S_FLAG_DURATION, AT(pod_ready_timeout_ns),
     "how long a capture waits for its pods to be Running with an IP", SEC, 3600 * SEC},
    {"audit-interval", K8S_FLAG_DURATION, AT(audit_interval_ns),
     "how often pods of opted-in workloads are checked for injection", SEC / 10, 3600 * SEC},
    {"resync-period", K8S_FLAG_DURATION, AT(resync_period_ns),
     "how often every unfinished capture is reconciled again, whatever the watches said "
     "(0 never)",
     0, 24 * 3600 * SEC},
    {"v", K8S_FLAG_INT, AT(verbosity), "log level 0 error .. 4 trace", 0, 10},
    {"dry-run", K8S_FLAG_BOOL, AT(dry_run),
     "check the flags, print the effective settings as JSON and exit", .opts = K8S_FLAG_NO_JSON},
    {NULL},
};

int op_config_parse_flags(struct op_config *cfg, int argc, char **argv, int *argi,
                          struct k8s_error *reterr)
{
    return k8s_flags_parse(flags, cfg, argc, argv, argi, reterr);
}

void op_config_usage(void)
{
    struct op_config dflt;
    op_config_init(&dflt);
    k8s_flags_usage(stdout, flags, &dflt);
}

/* The service account's namespace when running in a pod, else NULL. */
static char *sa_namespace(void)
{
    char *buf = NULL;
    size_t len = 0;
    if (k8s_read_file(SA_NS, 256, &buf, &len, NULL) < 0)
        return NULL;
    buf[strcspn(buf, " \r\n")] = '\0';
    if (!*buf) {
        free(buf);
        return NULL;
    }
    return buf;
}

static char *identity(void)
{
    const char *pod = getenv("POD_NAME");
    char host[256] = "localhost", *out = NULL;
    if (pod && *pod)
        return strdup(pod);
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    if (asprintf(&out, "%s_%ld", host, (long)getpid()) < 0)
        return NULL;
    return out;
}

int op_config_finish(struct op_config *cfg, struct k8s_error *reterr)
{
    char host[256];
    int port;
    if (strcmp(cfg->health_probe_bind_address, "0") &&
        op_parse_bind("--health-probe-bind-address", cfg->health_probe_bind_address, host,
                      sizeof(host), &port, reterr) < 0)
        return -K8S_EINVAL;
    if (strcmp(cfg->metrics_bind_address, "0") &&
        op_parse_bind("--metrics-bind-address", cfg->metrics_bind_address, host, sizeof(host),
                      &port, reterr) < 0)
        return -K8S_EINVAL;
    if (!*cfg->lease_name)
        return k8s_error_set(reterr, -K8S_EINVAL, "--leader-election-id must not be empty");
    free(cfg->lease_namespace);
    free(cfg->identity);
    cfg->lease_namespace =
        *cfg->lease_namespace_flag ? strdup(cfg->lease_namespace_flag) : sa_namespace();
    if (!cfg->lease_namespace)
        cfg->lease_namespace = strdup(DEFAULT_NS);
    cfg->identity = identity();
    if (!cfg->lease_namespace || !cfg->identity)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    return 0;
}

void op_config_done(struct op_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->lease_namespace);
    free(cfg->identity);
    cfg->lease_namespace = cfg->identity = NULL;
}

int op_parse_bind(const char *flag, const char *addr, char *host, size_t host_cap, int *port,
                  struct k8s_error *reterr)
{
    const char *colon = strrchr(addr, ':');
    const char *h = addr, *p = colon ? colon + 1 : addr;
    size_t hlen = colon ? (size_t)(colon - addr) : 0;
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']')
        h++, hlen -= 2;
    char *end = NULL;
    long v = strtol(p, &end, 10);
    if (!*p || *end || v < 0 || v > 65535 || hlen >= host_cap)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "%s: %s is not host:port (e.g. :8080, 127.0.0.1:8080)", flag, addr);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (int)v;
    return 0;
}

json_t *op_config_json(const struct op_config *c)
{
    json_t *o = k8s_flags_json(flags, c);
    if (o && json_object_set_new(o, "leader-election-namespace",
                                 json_string(c->lease_namespace ? c->lease_namespace : "")) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}
