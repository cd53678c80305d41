/*
 * wh_envtab — the table of the environment variables the webhook injects
 * (DESIGN §3.5): one row per variable, in dependency order, saying its
 * name, how its value is written (from the settings, the pod's identity
 * or its attributes, or a downward-API fieldRef), the OTLP signal it
 * configures and whether it varies with the pod; how one variable's env
 * entry is written as JSON text; and the $(NAME) references of a value.
 *
 * Thread-safety: the table is static and read-only; every function is
 * reentrant. Ownership: names and field paths are static; a struct
 * wh_env_var borrows its value and entry (from a base or a set, which own
 * the buffers). Failure: -K8S_ENOMEM from the writers (what they appended
 * is then unusable); the readers cannot fail.
 */
#ifndef WH_ENVTAB_H
#define WH_ENVTAB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_buf.h"
#include "k8s_err.h"
#include "wh_attrs.h"
#include "wh_config.h"
#include "wh_identity.h"

/* The injected variables, in dependency order: the rows of the table in
 * wh_envtab.c (DESIGN §3.5's env table). */
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

/* The OTLP signals a row configures (wh_envtab_signal). */
enum { WH_ENV_SIG_METRICS = 1, WH_ENV_SIG_TRACES = 2, WH_ENV_SIG_ALL = 3 };

/* The variable's name (static), or NULL for an id out of the table. */
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
    const char *entry;      /* its env entry as compact JSON text (wh_env_var_point), or NULL */
    size_t entry_len;
    /* the $(NAME) references of value (honouring $$), parsed once by
     * wh_env_var_point: the first WH_ENV_REFS_MAX, pointing into value */
    const char *ref[WH_ENV_REFS_MAX];
    uint32_t ref_len[WH_ENV_REFS_MAX], n_refs;
    uint32_t needs; /* bit id: value references our variable id */
};

/* What the values are written from (all borrowed). identity,
 * service_name, attrs and run_id are read by the per-pod rows only. */
struct wh_envtab_in {
    const struct wh_config *cfg;
    const struct wh_identity *identity;
    const char *service_name;
    const struct wh_attrs *attrs; /* our attributes, without rl.run.id */
    const char *run_id;           /* "" when unknown */
};

struct wh_envtab_in;

/* One row of the table, by id (wh_envtab.c: read it through the functions
 * below; they are inline, as the admission reads them per variable). */
struct wh_envtab_row {
    const char *name;
    size_t name_len;
    int (*value)(const struct wh_envtab_in *in, struct k8s_buf *out); /* NULL: a fieldRef */
    const char *field_path;                                           /* downward-API fieldRef */
    unsigned signal; /* the OTLP signal it configures (0: none) */
    bool per_pod;    /* its value varies with the pod; the others are the settings' (the base) */
};
extern const struct wh_envtab_row wh_envtab_rows[WH_ENV_COUNT];

/* The OTLP signal the variable configures (0: none). */
static inline unsigned wh_envtab_signal(enum wh_env_id id)
{
    return wh_envtab_rows[id].signal;
}

/* true when its value varies with the pod; the others are the settings'
 * alone (a base's, wh_envbase). */
static inline bool wh_envtab_per_pod(enum wh_env_id id)
{
    return wh_envtab_rows[id].per_pod;
}

/* v set to the bare row id: its id, name and fieldRef, nothing written. */
static inline void wh_env_var_init(struct wh_env_var *v, enum wh_env_id id)
{
    const struct wh_envtab_row *row = &wh_envtab_rows[id];
    *v = (struct wh_env_var){id, row->name, row->name_len};
    v->field_path = row->field_path;
}
/* Append row id's value, NUL-terminated, to values (a fieldRef's: "").
 * -K8S_ENOMEM. */
int wh_envtab_write_value(enum wh_env_id id, const struct wh_envtab_in *in,
                          struct k8s_buf *values) K8S_MUST_CHECK;
/* Append v's env entry as compact JSON text to b (v->value or, when NULL,
 * v->field_path must be set). -K8S_ENOMEM. */
int wh_env_var_write(const struct wh_env_var *v, struct k8s_buf *b) K8S_MUST_CHECK;
/* Append v's entry: the one written before (v->entry), else written now. */
K8S_MUST_CHECK static inline int wh_env_var_append(const struct wh_env_var *v, struct k8s_buf *b)
{
    return v->entry ? k8s_buf_append(b, v->entry, v->entry_len) : wh_env_var_write(v, b);
}
/* Point v into finished buffers (its value at values + value_at unless a
 * fieldRef, its entry at entries + entry_at) and parse its references
 * (ref[], needs). The buffers must outlive v's use. */
void wh_env_var_point(struct wh_env_var *v, const char *values, size_t value_at,
                      const char *entries, size_t entry_at);

/* The env entry JSON for v (new reference; NULL when out of memory). */
json_t *wh_env_var_json(const struct wh_env_var *v);

/* true when value references $(name) (honouring the $$ escape). */
bool wh_env_references(const char *value, const char *name);

#endif
