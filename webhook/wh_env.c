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
#include "wh_envbase.h"
#include "wh_warn.h"

#define ATTRS_VAR   "OTEL_RESOURCE_ATTRIBUTES"
#define OTLP_PREFIX "OTEL_EXPORTER_OTLP_"

/* The user's settings that take precedence over a signal's endpoint and
 * insecure variables (the OTel spec's exporter configuration). */
static const struct {
    const char *name; /* each begins with OTLP_PREFIX */
    unsigned signals;
} user_otlp[] = {
    {"OTEL_EXPORTER_OTLP_ENDPOINT", WH_ENV_SIG_ALL},
    {"OTEL_EXPORTER_OTLP_PROTOCOL", WH_ENV_SIG_ALL},
    {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", WH_ENV_SIG_METRICS},
    {"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", WH_ENV_SIG_METRICS},
    {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", WH_ENV_SIG_TRACES},
    {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", WH_ENV_SIG_TRACES},
};

/* ---------- the set ---------- */

/* The per-pod rows' values, each NUL-terminated, into values; where each
 * begins in at[]. */
static int write_values(struct wh_envset *set, const struct wh_envtab_in *in,
                        struct k8s_buf *values, size_t at[])
{
    char *tail; /* the typical set in one allocation */
    int r = k8s_buf_reserve(values, 2048, &tail);
    for (size_t i = 0; i < set->n && r == 0; i++) {
        enum wh_env_id id = set->v[i].id;
        at[i] = values->len;
        if (wh_envtab_per_pod(id))
            r = wh_envtab_write_value(id, in, values);
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
        r = wh_envtab_per_pod(v->id) ? wh_env_var_write(v, entries)
                                     : k8s_buf_append(entries, v->entry, v->entry_len);
    }
    return r;
}

/* The set's rows in order: the base's as they are, the per-pod ones bare. */
static void list_rows(struct wh_envset *set, const struct wh_envbase *base, bool service_name)
{
    const struct wh_env_var *settings = wh_envbase_vars(base);
    for (int j = 0; j < WH_ENV_COUNT; j++) {
        if (j == WH_ENV_SERVICE_NAME && !service_name)
            continue;
        struct wh_env_var *v = &set->v[set->n++];
        if (wh_envtab_per_pod((enum wh_env_id)j))
            wh_env_var_init(v, (enum wh_env_id)j);
        else
            *v = settings[j];
    }
}

/* Point the per-pod rows into the finished buffers; note every length we
 * look for among the user's names. */
static void finish_rows(struct wh_envset *set, const size_t vat[], const size_t eat[])
{
    for (size_t i = 0; i < set->n; i++) {
        struct wh_env_var *v = &set->v[i];
        size_t end = i + 1 < set->n ? eat[i + 1] : set->entries_len;
        if (wh_envtab_per_pod(v->id)) {
            wh_env_var_point(v, set->values, vat[i], set->entries, eat[i]);
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
    const struct wh_envbase *base = wh_envbase_of(cfg);
    if (!base && !(base = set->own_base = wh_envbase_new(cfg))) {
        wh_envset_done(set);
        return -K8S_ENOMEM;
    }
    list_rows(set, base, service_name != NULL);
    struct wh_envtab_in in = {cfg, id, service_name, &set->attrs, set->run_id};
    struct k8s_buf values, entries;
    k8s_buf_init(&values, 1 << 24);
    k8s_buf_init(&entries, 1 << 24);
    size_t vat[WH_ENV_COUNT], eat[WH_ENV_COUNT];
    int r = write_values(set, &in, &values, vat);
    for (size_t i = 0; i < set->n && r == 0; i++) /* wh_env_var_write reads the values */
        if (wh_envtab_per_pod(set->v[i].id))
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
        r = r ? r : wh_env_var_append(&set->v[i], b);
    }
    return r ? r : k8s_buf_append(b, "]", 1);
}

json_t *wh_envset_json(const struct wh_envset *set)
{
    json_t *list = json_array();
    for (size_t i = 0; i < set->n && list; i++)
        if (json_array_append_new(list, wh_env_var_json(&set->v[i])) < 0) {
            json_decref(list);
            list = NULL;
        }
    return list;
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
    size_t merged_idx;          /* the user entry it rewrites; SIZE_MAX: none */
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

/* {"op":<op>,"path":"<cpath>/env","value": */
static int env_open(struct k8s_jsonpatch_text *patch, const char *op, const char *cpath)
{
    int r = k8s_jsonpatch_text_open(patch, op);
    r = r ? r : k8s_jsonpatch_text_path(patch, cpath, strlen(cpath));
    r = r ? r : k8s_jsonpatch_text_path(patch, "/env", 4);
    return r ? r : k8s_jsonpatch_text_value(patch);
}

/* Ours in (slot, index) order, present and skipped ones (SIZE_MAX) last;
 * returns how many are placed. */
static size_t order_ours(const struct plan *p, size_t order[])
{
    size_t n = p->set->n, placed = 0;
    for (size_t j = 0; j < n; j++) {
        size_t k = j;
        for (; k > 0 && p->slot[order[k - 1]] > p->slot[j]; k--)
            order[k] = order[k - 1];
        order[k] = j;
        placed += p->slot[j] != SIZE_MAX;
    }
    return placed;
}

/* User entry i as it ends: the merged OTEL_RESOURCE_ATTRIBUTES rewritten,
 * any other as the document gave it. */
static int write_user(const struct plan *p, const struct wh_container *c, size_t i,
                      struct k8s_buf *b)
{
    if (i != p->merged_idx)
        return k8s_buf_append(b, c->env[i].raw, c->env[i].raw_len);
    int r = k8s_buf_appends(b, "{\"name\":\"" ATTRS_VAR "\",\"value\":");
    r = r ? r : k8s_json_write_string(p->merged, strlen(p->merged), b);
    return r ? r : k8s_buf_append(b, "}", 1);
}

/* A "," unless the list (its '[' last) is still empty. */
static int comma(struct k8s_buf *b)
{
    return b->data[b->len - 1] == '[' ? 0 : k8s_buf_append(b, ",", 1);
}

/* One operation writing the container's env as it ends, ours each in its
 * slot among the user's entries; nothing when nothing changes. The API
 * server's cost of a JSON Patch grows with its operations far more than
 * with its bytes (each is decoded and navigated to, and what it touches
 * decoded and re-encoded), so a list we change is written whole rather
 * than with one "add" per variable. */
static int emit_env(const struct plan *p, const struct wh_container *c, const char *cpath,
                    struct k8s_jsonpatch_text *patch, int *added)
{
    size_t order[WH_ENV_COUNT], o = 0;
    size_t placed = order_ours(p, order);
    if (!placed && p->merged_idx == SIZE_MAX)
        return 0;
    struct k8s_buf *b = &patch->buf;
    int r = env_open(patch, "add", cpath);
    r = r ? r : k8s_buf_append(b, "[", 1);
    for (size_t i = 0; i <= p->n_user && r == 0; i++) {
        for (; o < placed && p->slot[order[o]] == i && r == 0; o++, (*added)++) {
            r = comma(b);
            r = r ? r : wh_env_var_append(&p->set->v[order[o]], b);
        }
        if (i < p->n_user && r == 0) {
            r = comma(b);
            r = r ? r : write_user(p, c, i, b);
        }
    }
    r = r ? r : k8s_buf_append(b, "]", 1);
    return r ? r : k8s_jsonpatch_text_end(patch);
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

/* Merge into a user's OTEL_RESOURCE_ATTRIBUTES at user[idx]; the entry is
 * rewritten (p->merged_idx) when its value changes. */
static int merge_user_attrs(struct plan *p, size_t idx, const char *cname, json_t *warnings,
                            int *added)
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
    p->user[idx].value = p->merged;
    p->user[idx].has_ref = has_ref(p->merged, strlen(p->merged));
    p->merged_idx = idx;
    (*added)++;
    return 0;
}

static int whole_env(const struct wh_envset *set, const char *cpath,
                     struct k8s_jsonpatch_text *patch, int *added)
{
    int r = env_open(patch, "add", cpath);
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
        unsigned sig = wh_envtab_signal(id);
        p->skip[j] = (sig && cause[sig == WH_ENV_SIG_METRICS ? 0 : 1]) ||
                     (id == WH_ENV_SERVICE_NAME && service);
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
            bool mine =
                b < 2 ? wh_envtab_signal(id) == (b == 0 ? WH_ENV_SIG_METRICS : WH_ENV_SIG_TRACES)
                      : id == WH_ENV_SERVICE_NAME;
            if (mine && p->skip[j] && !p->present[j])
                len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
                                        len ? " and " : "", wh_env_name(id));
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
    int r = wh_env_patch_text(set, &c, cpath, merge, NULL, &text, warnings, ret_added);
    wh_container_done(&c);
    json_t *ops = r == 0 ? k8s_jsonpatch_text_tree(&text) : NULL;
    if (r == 0 && (!ops || json_array_extend(patch, ops) < 0))
        r = -K8S_ENOMEM;
    json_decref(ops);
    k8s_jsonpatch_text_done(&text);
    return r;
}

int wh_env_patch_text(const struct wh_envset *set, const struct wh_container *c, const char *cpath,
                      bool merge, struct k8s_arena *arena, struct k8s_jsonpatch_text *patch,
                      json_t *warnings, int *ret_added)
{
    const char *cname = c->name;
    *ret_added = 0;
    if (c->env_shape == WH_SHAPE_ABSENT || c->env_shape == WH_SHAPE_NULL)
        return whole_env(set, cpath, patch, ret_added);
    if (c->env_shape != WH_SHAPE_LIST) {
        wh_warnf(warnings, "container %s: env is not a list; not injected", cname);
        return 0;
    }
    struct plan p = {.set = set, .n_user = c->n_env, .merged_idx = SIZE_MAX};
    p.user = k8s_arena_malloc(arena, (p.n_user + 1) * sizeof(*p.user)); /* read_env sets each */
    if (!p.user)
        return -K8S_ENOMEM;
    p.user[p.n_user] = (struct entry){0};
    size_t attrs_idx = read_env(&p, c->env);
    const char *cause[2] = {NULL, NULL};
    precedence(&p, attrs_idx != SIZE_MAX ? &p.user[attrs_idx] : NULL, cause);
    int r = 0;
    if (attrs_idx != SIZE_MAX && merge)
        r = merge_user_attrs(&p, attrs_idx, cname, warnings, ret_added);
    if (r == 0 && !place(&p))
        wh_warnf(warnings,
                 "container %s: env references form a cycle with injected variables; "
                 "appended at the end",
                 cname);
    if (r == 0)
        warn_skips(&p, cause, cname, warnings);
    if (r == 0)
        r = emit_env(&p, c, cpath, patch, ret_added);
    free(p.merged);
    k8s_arena_release(arena, p.user);
    return r;
}
