#include "wh_envtab.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "k8s_json.h"

bool wh_env_references(const char *value, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = value; p && *p; p++) {
        if (p[0] != '$')
            continue;
        if (p[1] == '$') {
            p++;
            continue;
        }
        if (p[1] != '(')
            continue;
        const char *close = strchr(p + 2, ')');
        if (!close)
            return false;
        if ((size_t)(close - (p + 2)) == n && !strncmp(p + 2, name, n))
            return true;
        p = close;
    }
    return false;
}

/* ---------- the table ---------- */

/* Each row's value is appended to the values as it is built. */
static int identifier_value(const struct wh_envtab_in *in, struct k8s_buf *out)
{
    return k8s_buf_appends(out, in->identity->identifier);
}

static int metadata_value(const struct wh_envtab_in *in, struct k8s_buf *out)
{
    return k8s_buf_appends(out, in->identity->metadata);
}

static int collector_name(const struct wh_envtab_in *in, struct k8s_buf *out)
{
    return k8s_buf_appends(out, in->cfg->otel_collector_name);
}

static int collector_namespace(const struct wh_envtab_in *in, struct k8s_buf *out)
{
    return k8s_buf_appends(out, in->cfg->otel_collector_namespace);
}

static int endpoint(const struct wh_envtab_in *in, struct k8s_buf *out);

static int insecure(const struct wh_envtab_in *in, struct k8s_buf *out)
{
    (void)in;
    return k8s_buf_append(out, "true", 4); /* the collector on 4317 speaks plaintext gRPC */
}

static int service_name(const struct wh_envtab_in *in, struct k8s_buf *out)
{
    return k8s_buf_appends(out, in->service_name);
}

static int attributes(const struct wh_envtab_in *in, struct k8s_buf *out);

/* One row per injected variable (DESIGN §3.5), in dependency order. */
#define ROW(name, ...)                                                                             \
    {                                                                                              \
        name, sizeof(name) - 1, __VA_ARGS__                                                        \
    }
const struct wh_envtab_row wh_envtab_rows[WH_ENV_COUNT] = {
    [WH_ENV_IDENTIFIER] = ROW("GKE_DIAGON_IDENTIFIER", identifier_value, .per_pod = true),
    [WH_ENV_METADATA] = ROW("GKE_DIAGON_METADATA", metadata_value, .per_pod = true),
    [WH_ENV_POD_NAME] = ROW("OTEL_RESOURCE_ATTRIBUTES_POD_NAME", NULL, "metadata.name"),
    [WH_ENV_POD_UID] = ROW("OTEL_RESOURCE_ATTRIBUTES_POD_UID", NULL, "metadata.uid"),
    [WH_ENV_NODE_NAME] = ROW("OTEL_RESOURCE_ATTRIBUTES_NODE_NAME", NULL, "spec.nodeName"),
    [WH_ENV_COLLECTOR_NAME] = ROW("OTEL_COLLECTOR_NAME", collector_name),
    [WH_ENV_COLLECTOR_NAMESPACE] = ROW("OTEL_COLLECTOR_NAMESPACE", collector_namespace),
    [WH_ENV_METRICS_ENDPOINT] =
        ROW("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", endpoint, NULL, WH_ENV_SIG_METRICS),
    [WH_ENV_TRACES_ENDPOINT] =
        ROW("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint, NULL, WH_ENV_SIG_TRACES),
    [WH_ENV_METRICS_INSECURE] =
        ROW("OTEL_EXPORTER_OTLP_METRICS_INSECURE", insecure, NULL, WH_ENV_SIG_METRICS),
    [WH_ENV_TRACES_INSECURE] =
        ROW("OTEL_EXPORTER_OTLP_TRACES_INSECURE", insecure, NULL, WH_ENV_SIG_TRACES),
    [WH_ENV_SERVICE_NAME] = ROW("OTEL_SERVICE_NAME", service_name, .per_pod = true),
    [WH_ENV_RESOURCE_ATTRIBUTES] = ROW("OTEL_RESOURCE_ATTRIBUTES", attributes, .per_pod = true),
};

_Static_assert(sizeof(wh_envtab_rows) / sizeof(wh_envtab_rows[0]) == WH_ENV_COUNT,
               "one row per enum wh_env_id");

static int endpoint(const struct wh_envtab_in *in, struct k8s_buf *out)
{
    return k8s_buf_cat(out, "$(", wh_envtab_rows[WH_ENV_COLLECTOR_NAME].name, ").$(",
                       wh_envtab_rows[WH_ENV_COLLECTOR_NAMESPACE].name, ").svc.",
                       in->cfg->cluster_domain, ":4317", NULL);
}

/* Our OTEL_RESOURCE_ATTRIBUTES: our attributes, plus rl.run.id when an
 * rl.* key is present without one (RL metrics and the ML run share an id). */
static int attributes(const struct wh_envtab_in *in, struct k8s_buf *out)
{
    int r = wh_attrs_write(in->attrs, out);
    if (r || !in->run_id[0] || !wh_attrs_has_prefix(in->attrs, "rl.") ||
        wh_attrs_get(in->attrs, "rl.run.id"))
        return r;
    return k8s_buf_cat(out, ",rl.run.id=", in->run_id, NULL);
}

const char *wh_env_name(enum wh_env_id id)
{
    return id < WH_ENV_COUNT ? wh_envtab_rows[id].name : NULL;
}

int wh_envtab_write_value(enum wh_env_id id, const struct wh_envtab_in *in, struct k8s_buf *values)
{
    int r = wh_envtab_rows[id].value ? wh_envtab_rows[id].value(in, values) : 0;
    return r ? r : k8s_buf_append(values, "", 1);
}

/* ---------- one entry ---------- */

/* The env entry of v as compact JSON text, written straight into b in one
 * reservation (the one description of an entry: the tree of
 * wh_env_var_json is parsed from it). */
int wh_env_var_write(const struct wh_env_var *v, struct k8s_buf *b)
{
    static const char name[] = "{\"name\":", value[] = ",\"value\":",
                      from[] = ",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":";
    const char *val = v->value ? v->value : v->field_path;
    size_t nl = strlen(v->name), vl = strlen(val);
    char *start, *t;
    int r = k8s_buf_reserve(
        b, K8S_JSON_STRING_MAX(nl) + K8S_JSON_STRING_MAX(vl) + sizeof(name) + sizeof(from) + 3,
        &start);
    if (r < 0)
        return r;
    t = k8s_put(start, name, sizeof(name) - 1);
    t = k8s_json_put_string(t, v->name, nl);
    t = v->value ? k8s_put(t, value, sizeof(value) - 1) : k8s_put(t, from, sizeof(from) - 1);
    t = k8s_json_put_string(t, val, vl);
    t = k8s_put(t, "}}}", v->value ? 1 : 3);
    k8s_buf_commit(b, (size_t)(t - start));
    return 0;
}

json_t *wh_env_var_json(const struct wh_env_var *v)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 24);
    int r = wh_env_var_write(v, &b);
    json_t *tree = r == 0 ? json_loadb(b.data, b.len, 0, NULL) : NULL;
    k8s_buf_done(&b);
    return tree;
}

/* ---------- references ---------- */

/* Record the $(NAME) references of v's value (honouring $$). */
static void parse_refs(struct wh_env_var *v)
{
    v->n_refs = 0;
    const char *q = v->value ? strchr(v->value, '$') : NULL;
    for (; q && v->n_refs < WH_ENV_REFS_MAX; q = strchr(q + 1, '$')) {
        if (q[1] == '$') {
            q++;
            continue;
        }
        const char *close = q[1] == '(' ? strchr(q + 2, ')') : NULL;
        if (!close)
            continue;
        v->ref[v->n_refs] = q + 2;
        v->ref_len[v->n_refs++] = (uint32_t)(close - q - 2);
        q = close;
    }
}

/* Which of our variables v references, by id. */
static uint32_t ours_needed(const struct wh_env_var *v)
{
    uint32_t needs = 0;
    for (size_t k = 0; k < v->n_refs; k++)
        for (int j = 0; j < WH_ENV_COUNT; j++)
            if (v->ref_len[k] == wh_envtab_rows[j].name_len &&
                !memcmp(v->ref[k], wh_envtab_rows[j].name, v->ref_len[k]))
                needs |= 1u << j;
    return needs;
}

void wh_env_var_point(struct wh_env_var *v, const char *values, size_t value_at,
                      const char *entries, size_t entry_at)
{
    if (wh_envtab_rows[v->id].value)
        v->value = values + value_at;
    v->entry = entries + entry_at;
    parse_refs(v);
    v->needs = ours_needed(v);
}
