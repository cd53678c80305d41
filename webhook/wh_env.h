/*
 * wh_env — the environment variables the webhook injects (DESIGN §3.5),
 * one row of a table each, and the JSON Patch operations that add them to
 * one container without overwriting anything the user set.
 *
 * Order: every variable is placed after the variables its $(…)
 * references name, and before the first user variable that references it
 * (so user variables built from ours resolve too). A user's
 * OTEL_RESOURCE_ATTRIBUTES is merged key by key (user keys win, user pairs
 * kept as written) unless the pod opts out with
 * diagon.gke.io/otel-resource-attributes-merge: "false".
 *
 * The user's own OpenTelemetry settings take precedence (the OTel spec: a
 * per-signal endpoint overrides OTEL_EXPORTER_OTLP_ENDPOINT, and
 * OTEL_SERVICE_NAME overrides service.name): a container that sets
 * OTEL_EXPORTER_OTLP_ENDPOINT or _PROTOCOL gets no endpoint or insecure
 * variable; one that sets a signal's own endpoint or protocol gets none of
 * that signal's; one whose OTEL_RESOURCE_ATTRIBUTES has service.name gets
 * no OTEL_SERVICE_NAME. Each skip is named in a warning.
 *
 * Thread-safety: reentrant; a base is read-only once built, so threads
 * share it. Ownership: struct wh_envset owns its per-pod values and
 * borrows the settings' rows from a base (cfg's, which must outlive it, or
 * its own); wh_envset_done frees what it owns (NULL-safe, safe on a
 * zeroed struct).
 * Failure: -K8S_ENOMEM; shape problems of a container are warnings.
 */
#ifndef WH_ENV_H
#define WH_ENV_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"
#include "k8s_jsonpatch_text.h"
#include "k8s_mlrun.h"
#include "wh_attrs.h"
#include "wh_config.h"
#include "wh_identity.h"
#include "wh_podspec.h"

/* The injected variables, in dependency order: the rows of the table in
 * wh_env.c (DESIGN §3.5's env table). */
enum wh_env_id {
    WH_ENV_IDENTIFIER,          /* GKE_DIAGON_IDENTIFIER */
    WH_ENV_METADATA,            /* GKE_DIAGON_METADATA */
    WH_ENV_POD_NAME,            /* OTEL_RESOURCE_ATTRIBUTES_POD_NAME */
    WH_ENV_POD_UID,             /* OTEL_RESOURCE_ATTRIBUTES_POD_UID */
    WH_ENV_NODE_NAME,           /* OTEL_RESOURCE_ATTRIBUTES_NODE_NAME */
    WH_ENV_COLLECTOR_NAME,      /* OTEL_COLLECTOR_NAME */
    WH_ENV_COLLECTOR_NAMESPACE, /* OTEL_COLLECTOR_NAMESPACE */
    WH_ENV_METRICS_ENDPOINT,    /* OTEL_EXPORTER_OTLP_METRICS_ENDPOINT */
    WH_ENV_TRACES_ENDPOINT,     /* OTEL_EXPORTER_OTLP_TRACES_ENDPOINT */
    WH_ENV_METRICS_INSECURE,    /* OTEL_EXPORTER_OTLP_METRICS_INSECURE */
    WH_ENV_TRACES_INSECURE,     /* OTEL_EXPORTER_OTLP_TRACES_INSECURE */
    WH_ENV_SERVICE_NAME,        /* OTEL_SERVICE_NAME */
    WH_ENV_RESOURCE_ATTRIBUTES, /* OTEL_RESOURCE_ATTRIBUTES */
    WH_ENV_COUNT
};

/* The variable's name (static). */
const char *wh_env_name(enum wh_env_id id);

/* References parsed per variable: ours have at most 3 (the attributes'
 * $(OTEL_RESOURCE_ATTRIBUTES_*); wh_attrs encodes every other '$'). */
#define WH_ENV_REFS_MAX 4

struct wh_env_var {
    enum wh_env_id id;
    const char *name;
    size_t name_len;
    const char *value;      /* literal value, or NULL for a fieldRef */
    const char *field_path; /* downward-API fieldRef, or NULL */
    const char *entry;      /* its env entry as compact JSON text (wh_envset_build), or NULL */
    size_t entry_len;
    /* the $(NAME) references of value (honouring $$), parsed once by
     * wh_envset_build: the first WH_ENV_REFS_MAX, pointing into value */
    const char *ref[WH_ENV_REFS_MAX];
    uint32_t ref_len[WH_ENV_REFS_MAX], n_refs;
    uint32_t needs; /* bit id: value references our variable id */
};

/* The variables that depend on the settings alone (the fieldRefs, the
 * collector, the endpoints, insecure), written once per configuration
 * (wh_config_finish keeps one in cfg->env_base). */
struct wh_envbase;

/* New base for cfg's current settings, or NULL when out of memory. */
struct wh_envbase *wh_envbase_new(const struct wh_config *cfg);
void wh_envbase_free(struct wh_envbase *base);

struct wh_envset {
    size_t n;
    uint64_t name_lens;             /* bit (length mod 64) of every name ours have or reference */
    struct wh_attrs attrs;          /* our resource attributes, without rl.run.id */
    char run_id[K8S_MLRUN_ID_SIZE]; /* "" when unknown */
    char *values;                   /* what the per-pod rows' v[].value point into */
    char *entries;                  /* v[0..n)'s entries one after the other (v[].entry) */
    size_t entries_len;
    struct wh_envbase *own_base;       /* built here when cfg's does not match its settings */
    struct wh_env_var v[WH_ENV_COUNT]; /* dependency order; v[n..] undefined (kept last) */
};

/* Our variables for one pod. Copies what it keeps; the settings' own rows
 * point into cfg->env_base when it matches cfg (so cfg must outlive the
 * set), else into a base of the set's own. `attrs` is moved into the set
 * (the caller's struct is left empty). service_name NULL: no
 * OTEL_SERVICE_NAME (the attributes carry service.name). Each variable's
 * entry is written once here, and copied into every container's patch.
 * -K8S_ENOMEM on failure (set left empty). */
/* An empty set, safe to wh_envset_done (cheaper than zeroing v[]). */
void wh_envset_init(struct wh_envset *set);
int wh_envset_build(struct wh_envset *set, const struct wh_config *cfg,
                    const struct wh_identity *id, const char *service_name,
                    struct wh_attrs *attrs) K8S_MUST_CHECK;
void wh_envset_done(struct wh_envset *set);

/* The env entry JSON for v (new reference). */
json_t *wh_env_var_json(const struct wh_env_var *v);
/* The full list as a JSON array in order (new reference). */
json_t *wh_envset_json(const struct wh_envset *set);

/* Append to `patch` the operations that bring container (whose JSON
 * Pointer is `cpath`, e.g. "/spec/containers/0") up to date. merge=false
 * leaves a user's OTEL_RESOURCE_ATTRIBUTES untouched. *ret_added is the
 * number of variables added or merged. -K8S_ENOMEM on failure. */
int wh_env_patch(const struct wh_envset *set, const json_t *container, const char *cpath,
                 bool merge, json_t *patch, json_t *warnings, int *ret_added) K8S_MUST_CHECK;
/* The same operations written as text (the admission path): appended to
 * patch, whose text is unusable after a failure. */
int wh_env_patch_text(const struct wh_envset *set, const struct wh_container *c, const char *cpath,
                      bool merge, struct k8s_jsonpatch_text *patch, json_t *warnings,
                      int *ret_added) K8S_MUST_CHECK;

/* true when value references $(name) (honouring the $$ escape). */
bool wh_env_references(const char *value, const char *name);

#endif
