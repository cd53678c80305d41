#include "wh_env.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_arena.h"
#include "k8s_buf.h"
#include "k8s_json.h"
#include "k8s_jsonpatch.h"
#include "k8s_jsonpatch_text.h"
#include "wh_warn.h"

#define ATTRS_VAR   "OTEL_RESOURCE_ATTRIBUTES"
#define OTLP_PREFIX "OTEL_EXPORTER_OTLP_"

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

enum { SIG_METRICS = 1, SIG_TRACES = 2, SIG_ALL = SIG_METRICS | SIG_TRACES };

struct build {
    const struct wh_config *cfg;
    const struct wh_identity *id;
    const char *service_name;
    const struct wh_envset *set; /* its attributes and run id */
};

/* Each row's value is appended to the set's values as it is built. */
static int identifier_value(const struct build *b, struct k8s_buf *out)
{
    return k8s_buf_appends(out, b->id->identifier);
}

static int metadata_value(const struct build *b, struct k8s_buf *out)
{
    return k8s_buf_appends(out, b->id->metadata);
}

static int collector_name(const struct build *b, struct k8s_buf *out)
{
    return k8s_buf_appends(out, b->cfg->otel_collector_name);
}

static int collector_namespace(const struct build *b, struct k8s_buf *out)
{
    return k8s_buf_appends(out, b->cfg->otel_collector_namespace);
}

static int endpoint(const struct build *b, struct k8s_buf *out);

static int insecure(const struct build *b, struct k8s_buf *out)
{
    (void)b;
    return k8s_buf_append(out, "true", 4); /* the collector on 4317 speaks plaintext gRPC */
}

static int service_name(const struct build *b, struct k8s_buf *out)
{
    return k8s_buf_appends(out, b->service_name);
}

static int attributes(const struct build *b, struct k8s_buf *out);

/* One row per injected variable (DESIGN §3.5), in dependency order. */
#define ROW(name, ...)                                                                             \
    {                                                                                              \
        name, sizeof(name) - 1, __VA_ARGS__                                                        \
    }
static const struct row {
    const char *name;
    size_t name_len;
    int (*value)(const struct build *b, struct k8s_buf *out); /* NULL: a fieldRef */
    const char *field_path;                                   /* downward-API fieldRef */
    unsigned signal;                                          /* the OTLP signal it configures */
    bool per_pod; /* its value varies with the pod; the others are the settings' (the base) */
} rows[] = {
    [WH_ENV_IDENTIFIER] = ROW("GKE_DIAGON_IDENTIFIER", identifier_value, .per_pod = true),
    [WH_ENV_METADATA] = ROW("GKE_DIAGON_METADATA", metadata_value, .per_pod = true),
    [WH_ENV_POD_NAME] = ROW("OTEL_RESOURCE_ATTRIBUTES_POD_NAME", NULL, "metadata.name"),
    [WH_ENV_POD_UID] = ROW("OTEL_RESOURCE_ATTRIBUTES_POD_UID", NULL, "metadata.uid"),
    [WH_ENV_NODE_NAME] = ROW("OTEL_RESOURCE_ATTRIBUTES_NODE_NAME", NULL, "spec.nodeName"),
    [WH_ENV_COLLECTOR_NAME] = ROW("OTEL_COLLECTOR_NAME", collector_name),
    [WH_ENV_COLLECTOR_NAMESPACE] = ROW("OTEL_COLLECTOR_NAMESPACE", collector_namespace),
    [WH_ENV_METRICS_ENDPOINT] =
        ROW("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", endpoint, NULL, SIG_METRICS),
    [WH_ENV_TRACES_ENDPOINT] =
        ROW("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint, NULL, SIG_TRACES),
    [WH_ENV_METRICS_INSECURE] =
        ROW("OTEL_EXPORTER_OTLP_METRICS_INSECURE", insecure, NULL, SIG_METRICS),
    [WH_ENV_TRACES_INSECURE] =
        ROW("OTEL_EXPORTER_OTLP_TRACES_INSECURE", insecure, NULL, SIG_TRACES),
    [WH_ENV_SERVICE_NAME] = ROW("OTEL_SERVICE_NAME", service_name, .per_pod = true),
    [WH_ENV_RESOURCE_ATTRIBUTES] = ROW(ATTRS_VAR, attributes, .per_pod = true),
};

_Static_assert(sizeof(rows) / sizeof(rows[0]) == WH_ENV_COUNT, "one row per enum wh_env_id");

static int endpoint(const struct build *b, struct k8s_buf *out)
{
    return k8s_buf_cat(out, "$(", rows[WH_ENV_COLLECTOR_NAME].name, ").$(",
                       rows[WH_ENV_COLLECTOR_NAMESPACE].name, ").svc.", b->cfg->cluster_domain,
                       ":4317", NULL);
}

/* Our OTEL_RESOURCE_ATTRIBUTES: our attributes, plus rl.run.id when an
 * rl.* key is present without one (RL metrics and the ML run share an id). */
static int attributes(const struct build *b, struct k8s_buf *out)
{
    const struct wh_envset *set = b->set;
    int r = wh_attrs_write(&set->attrs, out);
    if (r || !set->run_id[0] || !wh_attrs_has_prefix(&set->attrs, "rl.") ||
        wh_attrs_get(&set->attrs, "rl.run.id"))
        return r;
    return k8s_buf_cat(out, ",rl.run.id=", set->run_id, NULL);
}

/* The user's settings that take precedence over a signal's endpoint and
 * insecure variables (the OTel spec's exporter configuration). */
static const struct {
    const char *name; /* each begins with OTLP_PREFIX */
    unsigned signals;
} user_otlp[] = {
    {"OTEL_EXPORTER_OTLP_ENDPOINT", SIG_ALL},
    {"OTEL_EXPORTER_OTLP_PROTOCOL", SIG_ALL},
    {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", SIG_METRICS},
    {"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", SIG_METRICS},
    {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", SIG_TRACES},
    {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", SIG_TRACES},
};

const char *wh_env_name(enum wh_env_id id)
{
    return id < WH_ENV_COUNT ? rows[id].name : NULL;
}

/* ---------- the set ---------- */

/* The env entry of v as compact JSON text, written straight into b in one
 * reservation (the one description of an entry: the tree below is parsed
 * from it). */
static int write_var(const struct wh_env_var *v, struct k8s_buf *b)
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

/* v's entry: the one wh_envset_build wrote, else written now. */
static int append_var(const struct wh_env_var *v, struct k8s_buf *b)
{
    return v->entry ? k8s_buf_append(b, v->entry, v->entry_len) : write_var(v, b);
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
            if (v->ref_len[k] == rows[j].name_len &&
                !memcmp(v->ref[k], rows[j].name, v->ref_len[k]))
                needs |= 1u << j;
    return needs;
}

/* ---------- the base: the rows the settings alone fix ---------- */

struct wh_envbase {
    /* the settings it was written for (borrowed pointers, compared) */
    const char *collector_name, *collector_namespace, *cluster_domain;
    struct wh_env_var v[WH_ENV_COUNT]; /* by id; only the rows that are not per_pod */
    char *values, *entries;
};

void wh_envbase_free(struct wh_envbase *base)
{
    if (!base)
        return;
    free(base->values);
    free(base->entries);
    free(base);
}

/* The row's value, NUL-terminated, at the end of values (NULL b: the
 * settings' rows only, which read nothing else). */
static int write_value(const struct row *row, const struct build *b, struct k8s_buf *values)
{
    int r = row->value ? row->value(b, values) : 0;
    return r ? r : k8s_buf_append(values, "", 1);
}

/* Where each offset recorded during writing points once the buffers are
 * complete (they may move until then). */
static void fix_var(struct wh_env_var *v, const char *values, size_t value_at, const char *entries,
                    size_t entry_at)
{
    if (rows[v->id].value)
        v->value = values + value_at;
    v->entry = entries + entry_at;
    parse_refs(v);
    v->needs = ours_needed(v);
}

struct wh_envbase *wh_envbase_new(const struct wh_config *cfg)
{
    struct wh_envbase *base = calloc(1, sizeof(*base));
    if (!base)
        return NULL;
    *base = (struct wh_envbase){.collector_name = cfg->otel_collector_name,
                                .collector_namespace = cfg->otel_collector_namespace,
                                .cluster_domain = cfg->cluster_domain};
    struct build b = {.cfg = cfg};
    struct k8s_buf values, entries;
    k8s_buf_init(&values, 1 << 24);
    k8s_buf_init(&entries, 1 << 24);
    size_t vat[WH_ENV_COUNT], eat[WH_ENV_COUNT];
    int r = 0;
    for (int j = 0; j < WH_ENV_COUNT && r == 0; j++) {
        if (rows[j].per_pod)
            continue;
        base->v[j] = (struct wh_env_var){(enum wh_env_id)j, rows[j].name, rows[j].name_len};
        base->v[j].field_path = rows[j].field_path;
        vat[j] = values.len;
        r = write_value(&rows[j], &b, &values);
    }
    for (int j = 0; j < WH_ENV_COUNT && r == 0; j++) {
        if (rows[j].per_pod)
            continue;
        if (rows[j].value)
            base->v[j].value = values.data + vat[j];
        eat[j] = entries.len;
        r = write_var(&base->v[j], &entries);
        base->v[j].entry_len = entries.len - eat[j];
    }
    base->values = k8s_buf_take(&values, NULL);
    base->entries = k8s_buf_take(&entries, NULL);
    for (int j = 0; j < WH_ENV_COUNT && r == 0 && base->values && base->entries; j++)
        if (!rows[j].per_pod)
            fix_var(&base->v[j], base->values, vat[j], base->entries, eat[j]);
    if (r < 0 || !base->values || !base->entries) {
        wh_envbase_free(base);
        return NULL;
    }
    return base;
}

/* cfg's base when it was written for cfg's current settings. */
static const struct wh_envbase *base_of(const struct wh_config *cfg)
{
    const struct wh_envbase *base = cfg->env_base;
    bool same = base && base->collector_name == cfg->otel_collector_name &&
                base->collector_namespace == cfg->otel_collector_namespace &&
                base->cluster_domain == cfg->cluster_domain;
    return same ? base : NULL;
}

/* ---------- the set ---------- */

/* The per-pod rows' values, each NUL-terminated, into values; where each
 * begins in at[]. */
static int write_values(struct wh_envset *set, const struct build *b, struct k8s_buf *values,
                        size_t at[])
{
    char *tail; /* the typical set in one allocation */
    int r = k8s_buf_reserve(values, 2048, &tail);
    for (size_t i = 0; i < set->n && r == 0; i++) {
        const struct row *row = &rows[set->v[i].id];
        at[i] = values->len;
        if (row->per_pod)
            r = write_value(row, b, values);
    }
    return r;
}

/* Every variable's entry, once, into entries: the base's copied, the
 * per-pod rows' written. */
static int write_entries(struct wh_envset *set, struct k8s_buf *entries, size_t at[])
{
    char *tail;
    int r = k8s_buf_reserve(entries, 4096, &tail);
    for (size_t i = 0; i < set->n && r == 0; i++) {
        at[i] = entries->len;
        const struct wh_env_var *v = &set->v[i];
        r = rows[v->id].per_pod ? write_var(v, entries)
                                : k8s_buf_append(entries, v->entry, v->entry_len);
    }
    return r;
}

/* The set's rows in order: the base's as they are, the per-pod ones bare. */
static void list_rows(struct wh_envset *set, const struct wh_envbase *base, bool service_name)
{
    for (int j = 0; j < WH_ENV_COUNT; j++) {
        if (j == WH_ENV_SERVICE_NAME && !service_name)
            continue;
        struct wh_env_var *v = &set->v[set->n++];
        if (rows[j].per_pod)
            *v = (struct wh_env_var){(enum wh_env_id)j, rows[j].name, rows[j].name_len};
        else
            *v = base->v[j];
    }
}

/* Point the per-pod rows into the finished buffers; note every length we
 * look for among the user's names. */
static void finish_rows(struct wh_envset *set, const size_t vat[], const size_t eat[])
{
    for (size_t i = 0; i < set->n; i++) {
        struct wh_env_var *v = &set->v[i];
        size_t end = i + 1 < set->n ? eat[i + 1] : set->entries_len;
        if (rows[v->id].per_pod) {
            fix_var(v, set->values, vat[i], set->entries, eat[i]);
            v->entry_len = end - eat[i];
        }
        set->name_lens |= 1ULL << (v->name_len & 63);
        for (size_t k = 0; k < v->n_refs; k++)
            set->name_lens |= 1ULL << (v->ref_len[k] & 63);
    }
}

/* Everything but v[] (which list_rows fills as far as n). */
void wh_envset_init(struct wh_envset *set)
{
    memset(set, 0, offsetof(struct wh_envset, v));
}

int wh_envset_build(struct wh_envset *set, const struct wh_config *cfg,
                    const struct wh_identity *id, const char *service_name, struct wh_attrs *attrs)
{
    wh_envset_init(set);
    set->attrs = *attrs;
    wh_attrs_init(attrs);
    k8s_strjoin(set->run_id, sizeof(set->run_id), id->run_id, NULL);
    const struct wh_envbase *base = base_of(cfg);
    if (!base && !(base = set->own_base = wh_envbase_new(cfg))) {
        wh_envset_done(set);
        return -K8S_ENOMEM;
    }
    list_rows(set, base, service_name != NULL);
    struct build b = {cfg, id, service_name, set};
    struct k8s_buf values, entries;
    k8s_buf_init(&values, 1 << 24);
    k8s_buf_init(&entries, 1 << 24);
    size_t vat[WH_ENV_COUNT], eat[WH_ENV_COUNT];
    int r = write_values(set, &b, &values, vat);
    for (size_t i = 0; i < set->n && r == 0; i++) /* write_var reads the values */
        if (rows[set->v[i].id].per_pod)
            set->v[i].value = values.data + vat[i];
    r = r ? r : write_entries(set, &entries, eat);
    set->values = k8s_buf_take(&values, NULL);
    set->entries = k8s_buf_take(&entries, &set->entries_len);
    if (r == 0 && (!set->values || !set->entries))
        r = -K8S_ENOMEM;
    if (r == 0)
        finish_rows(set, vat, eat);
    if (r < 0)
        wh_envset_done(set);
    return r;
}

void wh_envset_done(struct wh_envset *set)
{
    if (!set)
        return;
    free(set->values);
    free(set->entries);
    wh_attrs_done(&set->attrs);
    wh_envbase_free(set->own_base);
    for (size_t i = 0; i < set->n; i++)
        set->v[i].value = set->v[i].entry = NULL; /* they pointed into what was freed */
    wh_envset_init(set);
}

/* [entry, ...] of set's variables. */
static int write_vars(const struct wh_envset *set, struct k8s_buf *b)
{
    int r = k8s_buf_append(b, "[", 1);
    for (size_t i = 0; i < set->n && r == 0; i++) {
        if (i)
            r = k8s_buf_append(b, ",", 1);
        r = r ? r : append_var(&set->v[i], b);
    }
    return r ? r : k8s_buf_append(b, "]", 1);
}

static json_t *parse(struct k8s_buf *b, int r)
{
    json_t *v = r == 0 ? json_loadb(b->data, b->len, 0, NULL) : NULL;
    k8s_buf_done(b);
    return v;
}

json_t *wh_env_var_json(const struct wh_env_var *v)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 24);
    return parse(&b, write_var(v, &b));
}

json_t *wh_envset_json(const struct wh_envset *set)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 24);
    return parse(&b, write_vars(set, &b));
}

/* ---------- one container ---------- */

struct entry {
    const char *name;  /* NULL for entries without a string name */
    size_t len;        /* strlen(name); 0 without a name */
    const char *value; /* literal value, NULL when absent */
    bool value_from;   /* the value comes from valueFrom */
    bool has_ref;      /* value contains "$(": worth scanning */
};

struct plan {
    const struct wh_envset *set;
    struct entry *user; /* the container's env, possibly with a merged value */
    size_t n_user;
    size_t slot[WH_ENV_COUNT];  /* insert before user[slot]; n_user = at the end; SIZE_MAX = not */
    bool present[WH_ENV_COUNT]; /* the container sets it already */
    bool skip[WH_ENV_COUNT];    /* the user's own settings take precedence */
    char *merged;               /* merged OTEL_RESOURCE_ATTRIBUTES, owned */
};

static bool has_ref(const char *value, size_t len)
{
    for (const char *p = value, *end = value + len; p && (p = memchr(p, '$', (size_t)(end - p)));
         p++)
        if (p + 1 < end && p[1] == '(')
            return true;
    return false;
}

/* Does entry `e` (a user variable) reference name? */
static bool user_refs(const struct entry *e, const char *name)
{
    return e->has_ref && wh_env_references(e->value, name);
}

/* Does our variable v reference name? */
static bool our_refs(const struct wh_env_var *v, const char *name, size_t len)
{
    for (size_t k = 0; k < v->n_refs; k++)
        if (v->ref_len[k] == len && !memcmp(v->ref[k], name, len))
            return true;
    return false;
}

/* Does our variable j reference our variable k? */
static bool needs(const struct wh_envset *s, size_t j, size_t k)
{
    return s->v[j].needs >> s->v[k].id & 1;
}

/* One pass over the user's variables: which of ours each defines already
 * (present) and the last one each of ours references (earliest = its
 * index + 1). A container can have hundreds of variables; a name is only
 * compared when its length is one of ours or of our references. */
static void scan_names(struct plan *p, bool present[], size_t earliest[])
{
    const struct wh_envset *s = p->set;
    for (size_t i = 0; i < p->n_user; i++) {
        const char *name = p->user[i].name;
        size_t len = p->user[i].len;
        if (!name || !((s->name_lens >> (len & 63)) & 1))
            continue;
        for (size_t j = 0; j < s->n; j++) {
            if (s->v[j].name_len == len && !memcmp(s->v[j].name, name, len))
                present[j] = true;
            if (our_refs(&s->v[j], name, len))
                earliest[j] = i + 1;
        }
    }
}

/* Slot of each new variable: just before the first user variable that
 * needs it (directly or through our other variables), else at the end.
 * Returns false when a user variable needs ours while ours needs a later
 * user variable (then everything goes at the end). */
static bool place(struct plan *p)
{
    const struct wh_envset *s = p->set;
    size_t earliest[WH_ENV_COUNT] = {0};
    scan_names(p, p->present, earliest);
    for (size_t j = 0; j < s->n; j++)
        p->slot[j] = p->present[j] || p->skip[j] ? SIZE_MAX : p->n_user;
    for (size_t i = 0; i < p->n_user; i++) /* user variables that reference ours */
        for (size_t j = 0; p->user[i].has_ref && j < s->n; j++)
            if (p->slot[j] != SIZE_MAX && i < p->slot[j] && user_refs(&p->user[i], s->v[j].name))
                p->slot[j] = i;
    for (size_t j = 0; j < s->n; j++)
        for (size_t k = 0; k < j; k++)
            if (p->slot[k] != SIZE_MAX && needs(s, j, k) && earliest[k] > earliest[j])
                earliest[j] = earliest[k];
    for (size_t j = s->n; j-- > 0;) /* a dependency goes no later than its dependent */
        for (size_t k = 0; k < j; k++)
            if (p->slot[j] != SIZE_MAX && p->slot[k] != SIZE_MAX && p->slot[j] < p->slot[k] &&
                needs(s, j, k))
                p->slot[k] = p->slot[j];
    bool ok = true;
    for (size_t j = 0; j < s->n; j++)
        if (p->slot[j] != SIZE_MAX && earliest[j] > p->slot[j])
            ok = false;
    for (size_t j = 0; !ok && j < s->n; j++)
        if (p->slot[j] != SIZE_MAX)
            p->slot[j] = p->n_user;
    return ok;
}

/* {"op":<op>,"path":"<cpath>/env — the rest of the path follows. */
static int env_open(struct k8s_jsonpatch_text *patch, const char *op, const char *cpath)
{
    int r = k8s_jsonpatch_text_open(patch, op);
    r = r ? r : k8s_jsonpatch_text_path(patch, cpath, strlen(cpath));
    return r ? r : k8s_jsonpatch_text_path(patch, "/env", 4);
}

/* The rest of {"op":...,"path":"<cpath>/env/<i>[/value]","value": — i may
 * be K8S_JSONPATCH_TEXT_END ("-"). */
static int env_path(struct k8s_jsonpatch_text *patch, size_t i, bool value)
{
    int r = k8s_jsonpatch_text_path_index(patch, i);
    r = r || !value ? r : k8s_jsonpatch_text_path(patch, "/value", 6);
    return r ? r : k8s_jsonpatch_text_value(patch);
}

/* Emit the "add" operations in ascending final position. */
static int emit_adds(const struct plan *p, const char *cpath, struct k8s_jsonpatch_text *patch,
                     int *added)
{
    /* ours in (slot, index) order; present ones (SIZE_MAX) sort last */
    size_t order[WH_ENV_COUNT], n = p->set->n;
    for (size_t j = 0; j < n; j++) {
        size_t k = j;
        for (; k > 0 && p->slot[order[k - 1]] > p->slot[j]; k--)
            order[k] = order[k - 1];
        order[k] = j;
    }
    size_t inserted = 0, head = 0, head_len = 0; /* the first add's {"op":"add","path":".../env */
    int r = 0;
    for (size_t o = 0; o < n && r == 0; o++) {
        size_t j = order[o], i = p->slot[j];
        if (i == SIZE_MAX)
            break;
        if (head_len) {
            r = k8s_jsonpatch_text_open_as(patch, head, head_len);
        } else {
            r = env_open(patch, "add", cpath);
            head = patch->at;
            head_len = r ? 0 : patch->buf.len - head;
        }
        r = r ? r : env_path(patch, i == p->n_user ? K8S_JSONPATCH_TEXT_END : i + inserted, false);
        r = r ? r : append_var(&p->set->v[j], &patch->buf);
        r = r ? r : k8s_jsonpatch_text_end(patch);
        inserted++;
        (*added)++;
    }
    return r;
}

/* Our attributes plus rl.run.id when the union with the user's keys has an
 * rl.* key but no rl.run.id. */
static char *merge_value(const struct wh_envset *s, const char *user, json_t *warnings,
                         const char *cname)
{
    struct wh_attrs theirs, ours;
    wh_attrs_init(&theirs);
    wh_attrs_init(&ours);
    char *out = NULL;
    if (wh_attrs_parse_user(&theirs, user) < 0)
        goto out_done;
    for (size_t i = 0; i < s->attrs.n; i++)
        if (wh_attrs_put(&ours, s->attrs.kv[i].key, s->attrs.kv[i].value) < 0)
            goto out_done;
    bool rl = wh_attrs_has_prefix(&theirs, "rl.") || wh_attrs_has_prefix(&ours, "rl.");
    bool has_id = wh_attrs_get(&theirs, "rl.run.id") || wh_attrs_get(&ours, "rl.run.id");
    if (rl && !has_id && s->run_id[0] && wh_attrs_put(&ours, "rl.run.id", s->run_id) < 0)
        goto out_done;
    if (rl && !has_id && !s->run_id[0])
        wh_warnf(warnings, "container %s: rl.run.id not added: the ML run id is unknown", cname);
    out = wh_attrs_merge_into(user, &ours);
out_done:
    wh_attrs_done(&theirs);
    wh_attrs_done(&ours);
    return out;
}

/* Merge into a user's OTEL_RESOURCE_ATTRIBUTES at user[idx]. */
static int merge_user_attrs(struct plan *p, size_t idx, const char *cpath, const char *cname,
                            struct k8s_jsonpatch_text *patch, json_t *warnings, int *added)
{
    if (p->user[idx].value_from) {
        wh_warnf(warnings, "container %s: " ATTRS_VAR " comes from valueFrom; not merged", cname);
        return 0;
    }
    /* an entry with neither value nor valueFrom is the empty string */
    const char *user = p->user[idx].value ? p->user[idx].value : "";
    p->merged = merge_value(p->set, user, warnings, cname);
    if (!p->merged)
        return -K8S_ENOMEM;
    if (!strcmp(p->merged, user))
        return 0;
    const char *op = p->user[idx].value ? "replace" : "add";
    size_t len = strlen(p->merged);
    p->user[idx].value = p->merged;
    p->user[idx].has_ref = has_ref(p->merged, len);
    (*added)++;
    int r = env_open(patch, op, cpath);
    r = r ? r : env_path(patch, idx, true);
    r = r ? r : k8s_json_write_string(p->merged, len, &patch->buf);
    return r ? r : k8s_jsonpatch_text_end(patch);
}

static int whole_env(const struct wh_envset *set, const char *cpath,
                     struct k8s_jsonpatch_text *patch, int *added)
{
    int r = env_open(patch, "add", cpath);
    r = r ? r : k8s_jsonpatch_text_value(patch);
    r = r ? r : write_vars(set, &patch->buf);
    *added += (int)set->n;
    return r ? r : k8s_jsonpatch_text_end(patch);
}

/* One user variable, as the pod spec reader found it. */
static void read_entry(const struct wh_envvar *e, struct entry *out)
{
    *out = (struct entry){.name = e->name,
                          .len = e->name ? e->len : 0,
                          .value = e->value,
                          .value_from = e->value_from,
                          .has_ref = e->value && has_ref(e->value, e->vlen)};
}

/* ---------- the user's own OpenTelemetry settings ---------- */

/* Is entry e a variable of ours from an earlier review (same name, same
 * value), rather than the user's own setting? */
static bool ours_already(const struct wh_envset *s, const struct entry *e)
{
    for (size_t j = 0; j < s->n; j++)
        if (s->v[j].value && e->value && !strcmp(s->v[j].name, e->name) &&
            !strcmp(s->v[j].value, e->value))
            return true;
    return false;
}

/* The user's setting that overrides each signal (NULL: none). */
static void otlp_overrides(const struct plan *p, const char *cause[2])
{
    for (size_t i = 0; i < p->n_user; i++) {
        const struct entry *e = &p->user[i];
        /* every name there is OTEL_EXPORTER_OTLP_*: most entries fail at the prefix */
        if (!e->name || e->len < sizeof(OTLP_PREFIX) - 1 ||
            memcmp(e->name, OTLP_PREFIX, sizeof(OTLP_PREFIX) - 1))
            continue;
        for (size_t k = 0; k < sizeof(user_otlp) / sizeof(user_otlp[0]); k++) {
            if (strcmp(e->name, user_otlp[k].name) || ours_already(p->set, e))
                continue;
            for (int b = 0; b < 2; b++)
                if ((user_otlp[k].signals >> b & 1) && !cause[b])
                    cause[b] = e->name;
        }
    }
}

static bool user_sets_service_name(const struct entry *attrs)
{
    struct wh_attrs theirs;
    wh_attrs_init(&theirs);
    bool has = attrs && attrs->value && wh_attrs_parse_user(&theirs, attrs->value) == 0 &&
               wh_attrs_get(&theirs, "service.name");
    wh_attrs_done(&theirs);
    return has;
}

/* Mark ours that yield to the user's settings (before the merge changes
 * the user's OTEL_RESOURCE_ATTRIBUTES). */
static void precedence(struct plan *p, const struct entry *user_attrs, const char *cause[2])
{
    otlp_overrides(p, cause);
    bool service = user_sets_service_name(user_attrs);
    for (size_t j = 0; j < p->set->n; j++) {
        enum wh_env_id id = p->set->v[j].id;
        unsigned sig = rows[id].signal;
        p->skip[j] =
            (sig && cause[sig == SIG_METRICS ? 0 : 1]) || (id == WH_ENV_SERVICE_NAME && service);
    }
}

/* Name each skip in a warning: what was not injected, and why. */
static void warn_skips(const struct plan *p, const char *const cause[2], const char *cname,
                       json_t *warnings)
{
    for (int b = 0; b < 3; b++) { /* metrics, traces, service name */
        char names[200] = "";
        size_t len = 0;
        for (size_t j = 0; j < p->set->n; j++) {
            enum wh_env_id id = p->set->v[j].id;
            bool mine = b < 2 ? rows[id].signal == (b == 0 ? SIG_METRICS : SIG_TRACES)
                              : id == WH_ENV_SERVICE_NAME;
            if (mine && p->skip[j] && !p->present[j])
                len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
                                        len ? " and " : "", rows[id].name);
            len = len < sizeof(names) ? len : sizeof(names) - 1;
        }
        if (len)
            wh_warnf(warnings, "container %s: %s not injected: the container sets %s", cname, names,
                     b < 2 ? cause[b] : "service.name in its " ATTRS_VAR);
    }
}

/* Read the user's variables; the index of their OTEL_RESOURCE_ATTRIBUTES
 * (SIZE_MAX: none). */
static size_t read_env(struct plan *p, const struct wh_envvar *env)
{
    size_t attrs_idx = SIZE_MAX;
    for (size_t i = 0; i < p->n_user; i++) {
        read_entry(&env[i], &p->user[i]);
        if (p->user[i].len == sizeof(ATTRS_VAR) - 1 && !strcmp(p->user[i].name, ATTRS_VAR) &&
            attrs_idx == SIZE_MAX)
            attrs_idx = i;
    }
    return attrs_idx;
}

int wh_env_patch(const struct wh_envset *set, const json_t *container, const char *cpath,
                 bool merge, json_t *patch, json_t *warnings, int *ret_added)
{
    struct k8s_jsonpatch_text text;
    struct wh_container c;
    if (wh_container_from_json(container, &c) < 0)
        return -K8S_ENOMEM;
    k8s_jsonpatch_text_init(&text);
    int r = wh_env_patch_text(set, &c, cpath, merge, &text, warnings, ret_added);
    wh_container_done(&c);
    json_t *ops = r == 0 ? k8s_jsonpatch_text_tree(&text) : NULL;
    if (r == 0 && (!ops || json_array_extend(patch, ops) < 0))
        r = -K8S_ENOMEM;
    json_decref(ops);
    k8s_jsonpatch_text_done(&text);
    return r;
}

int wh_env_patch_text(const struct wh_envset *set, const struct wh_container *c, const char *cpath,
                      bool merge, struct k8s_jsonpatch_text *patch, json_t *warnings,
                      int *ret_added)
{
    const char *cname = c->name;
    *ret_added = 0;
    if (c->env_shape == WH_SHAPE_ABSENT || c->env_shape == WH_SHAPE_NULL)
        return whole_env(set, cpath, patch, ret_added);
    if (c->env_shape != WH_SHAPE_LIST) {
        wh_warnf(warnings, "container %s: env is not a list; not injected", cname);
        return 0;
    }
    struct plan p = {.set = set, .n_user = c->n_env};
    p.user = k8s_scope_alloc((p.n_user + 1) * sizeof(*p.user)); /* read_env sets each */
    if (!p.user)
        return -K8S_ENOMEM;
    p.user[p.n_user] = (struct entry){0};
    size_t attrs_idx = read_env(&p, c->env);
    const char *cause[2] = {NULL, NULL};
    precedence(&p, attrs_idx != SIZE_MAX ? &p.user[attrs_idx] : NULL, cause);
    int r = 0;
    if (attrs_idx != SIZE_MAX && merge)
        r = merge_user_attrs(&p, attrs_idx, cpath, cname, patch, warnings, ret_added);
    if (r == 0 && !place(&p))
        wh_warnf(warnings,
                 "container %s: env references form a cycle with injected variables; "
                 "appended at the end",
                 cname);
    if (r == 0)
        warn_skips(&p, cause, cname, warnings);
    if (r == 0)
        r = emit_adds(&p, cpath, patch, ret_added);
    free(p.merged);
    k8s_scope_free(p.user);
    return r;
}
