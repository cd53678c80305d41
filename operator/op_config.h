/*
 * op_config — the operator's settings (DESIGN §4.4): flags with Go syntax
 * (the chart passes them through controller.args), then environment
 * (POD_NAME, POD_NAMESPACE), then defaults. Parsed once in main;
 * read-only afterwards, so any thread may read it without locking.
 *
 * Strings are borrowed from argv/environ or static defaults, except
 * identity and lease_namespace, owned by the struct (op_config_done).
 */
#ifndef OP_CONFIG_H
#define OP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "k8s_err.h"

struct op_config {
    bool leader_elect;
    const char *health_probe_bind_address; /* ":8081"; "0" disables */
    const char *metrics_bind_address;      /* ":8080"; "0" disables */
    int64_t sidecar_timeout_ns;            /* ceiling for one capture, end to end */
    bool disable_hostname_override;
    const char *kubeconfig;
    const char *namespace; /* "" = all namespaces */
    int64_t capture_max_retries;
    int64_t max_capture_duration_ns;
    bool allow_cross_namespace;
    const char *lease_namespace_flag; /* --leader-election-namespace as given */
    const char *lease_name;
    int64_t workers;
    int64_t shutdown_grace_ns;    /* SIGTERM: time captures get to finish */
    int64_t pod_ready_timeout_ns; /* how long a capture waits for its pods */
    int64_t audit_interval_ns;
    int64_t resync_period_ns; /* every unfinished capture queued again; 0 never */
    int64_t verbosity;
    bool dry_run; /* validate, print the settings as JSON, exit */
    /* derived by op_config_finish */
    char *lease_namespace;
    char *identity; /* leader identity: $POD_NAME, else hostname_pid */
};

void op_config_init(struct op_config *cfg);

/* Parse argv[*argi..]; 1 when -h/--help was given; -K8S_EINVAL naming the
 * flag. */
int op_config_parse_flags(struct op_config *cfg, int argc, char **argv, int *argi,
                          struct k8s_error *reterr) K8S_MUST_CHECK;

/* The flags, each with its default, on stdout. */
void op_config_usage(void);

/* Derive the lease namespace and the identity; check cross-field rules.
 * -K8S_EINVAL naming the flag. */
int op_config_finish(struct op_config *cfg, struct k8s_error *reterr) K8S_MUST_CHECK;

void op_config_done(struct op_config *cfg);

/* The effective settings as a JSON object, a member per flag (the lease
 * namespace as derived), new reference; NULL when out of memory. For
 * --dry-run and the start-up log line. */
json_t *op_config_json(const struct op_config *cfg);

/* "host:port" → host (NULL for all interfaces) and port; ":8081", "8081",
 * "127.0.0.1:0", "[::1]:8080". -K8S_EINVAL naming flag. */
int op_parse_bind(const char *flag, const char *addr, char *host, size_t host_cap, int *port,
                  struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
