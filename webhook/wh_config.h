/*
 * wh_config — the webhook's settings: flags, then environment, then
 * defaults (DESIGN §3). Parsed once in main; read-only afterwards, so any
 * thread may read it without locking.
 *
 * Strings are borrowed from argv/environ or static defaults, except the
 * skip list, which wh_config_done frees.
 */
#ifndef WH_CONFIG_H
#define WH_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"

#define WH_MAX_SKIP 32

/* Default thread cap: each thread is a libmicrohttpd daemon (~50 KiB of
 * RSS); an API server holds ~25 connections, so a 208-vCPU host needs no
 * more threads than a small one. --threads overrides. */
#define WH_THREADS_MAX_DEFAULT 8

struct wh_envbase;

struct wh_config {
    /* server */
    int64_t port;
    const char *bind_address;
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *metrics_bind_address; /* "" = off */
    int64_t max_request_bytes;
    int64_t shutdown_timeout_ns;
    int64_t request_timeout_ns;   /* slow-client cutoff while a request is read or answered */
    int64_t idle_timeout_ns;      /* a keep-alive connection between requests */
    int64_t handshake_timeout_ns; /* a new connection's TLS + first headers */
    int64_t connection_memory;    /* per-connection buffer: headers and reads */
    int64_t max_connections;
    int64_t threads;   /* default: usable CPUs (k8s_cpu), at most WH_THREADS_MAX_DEFAULT */
    int64_t budget_ns; /* whole admission decision */
    /* injection */
    const char *cluster_name; /* --cluster-name or $CLUSTER_NAME; "" = not given */
    char *cluster_found;      /* found later (GKE metadata server); atomic, set once */
    const char *cluster_domain;
    const char *otel_collector_name;
    const char *otel_collector_namespace;
    const char *skip_containers_flag;
    char *skip_store;
    const char *skip[WH_MAX_SKIP];
    size_t n_skip;
    struct wh_envbase *env_base; /* the injected variables these settings alone fix (wh_envbase) */
    /* API access */
    bool standalone;
    const char *kubeconfig;
    int64_t verbosity;
    bool dry_run; /* validate, print the settings as JSON, exit */
};

/* Defaults, then environment (CERT_PATH, KEY_PATH, CLUSTER_NAME,
 * KUBERNETES_CLUSTER_DOMAIN), ready for flag parsing. */
void wh_config_init(struct wh_config *cfg);

/* Parse server flags from argv[*argi..]; see k8s_flags_parse for the
 * return values (1 = help requested). */
int wh_config_parse_flags(struct wh_config *cfg, int argc, char **argv, int *argi,
                          struct k8s_error *reterr) K8S_MUST_CHECK;

/* Split the skip list, check cross-field rules and write the variables
 * the settings alone fix (env_base). -K8S_EINVAL naming the flag, or
 * -K8S_ENOMEM, on failure. */
int wh_config_finish(struct wh_config *cfg, struct k8s_error *reterr) K8S_MUST_CHECK;

/* The flags, each with its default, on stdout. */
void wh_config_usage(void);

/* The effective settings, a member per flag: new reference, NULL when out
 * of memory. For --dry-run. */
json_t *wh_config_json(const struct wh_config *cfg);

void wh_config_done(struct wh_config *cfg);

/* The cluster name to inject: the flag/env value, else the one found on
 * the metadata server, else "". Any thread. */
const char *wh_config_cluster(const struct wh_config *cfg);
/* Record a found cluster name (steals it); ignored once one is set. */
void wh_config_found_cluster(struct wh_config *cfg, char *name);

/* true when name is in the --skip-containers list. */
bool wh_config_skips(const struct wh_config *cfg, const char *name);

#endif
