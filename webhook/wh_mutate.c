#include "wh_mutate.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_arena.h"
#include "k8s_buf.h"
#include "k8s_codec.h"
#include "k8s_json.h"
#include "k8s_jsonpatch.h"
#include "k8s_jsonpatch_text.h"
#include "k8s_time.h"
#include "wh_annpatch.h"
#include "wh_attrs.h"
#include "wh_env.h"
#include "wh_identity.h"
#include "wh_policy.h"
#include "wh_warn.h"

struct target {
    const struct wh_container *c;
    char path[320]; /* JSON Pointer of the container */
    const char *name;
};

/* Everything one admission needs, gathered before the patch is built. */
struct ctx {
    const struct wh_config *cfg;
    const struct wh_lookup *lk;
    const struct wh_mutate_in *in;
    struct wh_mutate_out *out;
    const struct wh_pod *pod;    /* in->view, or own read from in->pod */
    const struct wh_meta *meta;  /* the pod's metadata */
    const struct wh_podspec *ps; /* the pod's spec */
    struct wh_pod own;
    json_t *ns_doc;    /* namespace metadata, NULL when unknown */
    struct wh_meta ns; /* of ns_doc */
    struct wh_workload wl;
    struct target *t; /* one slot per container and init container */
    size_t nt, cap;
};

K8S_PRINTF(2, 3) static void set_reason(struct wh_mutate_out *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
    va_end(ap);
}

/* ---------- shape and targets ---------- */

/* The pod as the readers give it: the caller's, or read here. */
static int read_pod(struct ctx *x)
{
    x->pod = x->in->view;
    if (!x->pod) {
        x->pod = &x->own;
        if (wh_pod_from_json(x->in->pod, &x->own) < 0)
            return -K8S_ENOMEM;
    }
    x->meta = &x->pod->meta;
    x->ps = &x->pod->spec;
    return 0;
}

static bool shape_ok(struct ctx *x)
{
    enum wh_shape meta = x->meta->shape;
    const char *bad =
        x->pod->shape != WH_SHAPE_LIST                      ? "pod is not an object"
        : meta == WH_SHAPE_NULL || meta == WH_SHAPE_OTHER   ? "metadata is not an object"
        : x->ps->shape != WH_SHAPE_LIST                     ? "spec is missing"
        : x->ps->list[WH_CONTAINERS].shape != WH_SHAPE_LIST ? "spec.containers is not a list"
                                                            : NULL;
    if (!bad)
        return true;
    set_reason(x->out, "unexpected pod shape: %s", bad);
    wh_warn_cat(x->out->warnings, "mldiagnostics: not injected: ", bad, NULL);
    return false;
}

/* Is name in the comma-separated list? */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && isspace((unsigned char)t[-1]))
            t--;
        if ((size_t)(t - p) == n && n && !strncmp(p, name, n))
            return true;
        p = e;
    }
    return false;
}

/* v in decimal, in buf; returns buf. */
static const char *decimal(size_t v, char buf[24])
{
    char *p = buf + 23;
    *p = '\0';
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    return p;
}

static void add_targets(struct ctx *x, enum wh_podspec_list l, bool sidecars_only, const char *only)
{
    const char *field = wh_podspec_list_name(l);
    for (size_t i = 0; i < x->ps->list[l].n; i++) {
        const struct wh_container *c = &x->ps->list[l].c[i];
        const char *name = c->name;
        if (!c->is_object || !name || x->nt == x->cap)
            continue;
        if (sidecars_only && !(c->restart_policy && !strcmp(c->restart_policy, "Always")))
            continue; /* a plain init container: runs to completion before the app */
        if (wh_config_skips(x->cfg, name) || (only && !in_list(only, name)))
            continue;
        struct target *t = &x->t[x->nt++];
        t->c = c;
        t->name = name;
        char idx[24]; /* the paths are built without printf: this is per container */
        k8s_strjoin(t->path, sizeof(t->path), x->in->path, "/spec/", field, "/", decimal(i, idx),
                    NULL);
    }
}

/* Names in diagon.gke.io/inject-containers that match nothing. */
static void warn_unmatched(struct ctx *x, const char *only)
{
    char *copy = strdup(only), *save = NULL;
    for (char *n = copy ? strtok_r(copy, ", ", &save) : NULL; n; n = strtok_r(NULL, ", ", &save)) {
        bool found = false;
        for (size_t i = 0; i < x->nt && !found; i++)
            found = !strcmp(x->t[i].name, n);
        if (!found)
            wh_warnf(x->out->warnings,
                     K8S_ANN_CONTAINERS ": \"%s\" is not an injectable container of this pod", n);
    }
    free(copy);
}

static int find_targets(struct ctx *x)
{
    const char *only = wh_meta_annotation(x->meta, K8S_ANN_CONTAINERS);
    x->cap = x->ps->list[WH_CONTAINERS].n + x->ps->list[WH_INIT_CONTAINERS].n;
    x->t = k8s_arena_malloc(x->in->arena, (x->cap ? x->cap : 1) * sizeof(*x->t));
    if (!x->t)
        return -K8S_ENOMEM;
    memset(x->t, 0, (x->cap ? x->cap : 1) * sizeof(*x->t));
    add_targets(x, WH_CONTAINERS, false, only);
    add_targets(x, WH_INIT_CONTAINERS, true, only);
    if (only)
        warn_unmatched(x, only);
    return 0;
}

/* ---------- decision ---------- */

/* 0 (what could not be learned is in why), or -K8S_ENOMEM. */
static int lookup_namespace(struct ctx *x, char *why, size_t cap)
{
    struct k8s_error err = {0};
    int r = wh_lookup_meta(x->lk, &k8s_kind_namespace, "", x->in->ns, x->in->deadline_ns,
                           &x->ns_doc, &err);
    if (r == 0)
        return wh_meta_from_json(x->ns_doc, &x->ns);
    if (!x->lk)
        k8s_strjoin(why, cap, "standalone: namespace ", x->in->ns, " not looked up", NULL);
    else
        snprintf(why, cap, "lookup of namespace %s: %s", x->in->ns,
                 err.message[0] ? err.message : k8s_strerror(r));
    if (x->lk && r != -K8S_ENOTFOUND)
        wh_warn_cat(x->out->warnings, "mldiagnostics: ", why, NULL);
    return 0;
}

static int decide(struct ctx *x)
{
    const struct wh_workload *w = x->in->workload;
    if (!w) {
        if (wh_workload_resolve(x->meta, x->in->ns, x->lk, x->in->now, x->in->deadline_ns, &x->wl) <
            0)
            return -K8S_ENOMEM;
        w = &x->wl;
    }
    k8s_strjoin(x->out->workload, sizeof(x->out->workload), w->kind, "/", w->name, NULL);
    if (w->lookup_failed) /* the decision below may lack the workload's labels */
        wh_warn_cat(x->out->warnings, "mldiagnostics: ", w->unknown_why, NULL);
    char ns_why[200] = "";
    if (!x->in->workload && lookup_namespace(x, ns_why, sizeof(ns_why)) < 0)
        return -K8S_ENOMEM;
    struct wh_decision d = wh_policy_decide(x->meta, w, x->ns_doc ? &x->ns.labels : NULL,
                                            ns_why[0] ? ns_why : NULL, x->out->warnings);
    x->out->inject = d.inject;
    _Static_assert(sizeof(x->out->reason) >= sizeof(d.reason), "a decision's reason fits");
    memcpy(x->out->reason, d.reason, sizeof(d.reason));
    if (x->lk && k8s_mono_ns() > x->in->deadline_ns)
        wh_warnf(x->out->warnings, "mldiagnostics: admission budget exceeded during lookups; "
                                   "injected with what was known");
    return 0;
}

static const struct wh_workload *workload(const struct ctx *x)
{
    return x->in->workload ? x->in->workload : &x->wl;
}

/* ---------- what to inject ---------- */

/* OTEL_SERVICE_NAME's value; NULL when the attributes we write carry
 * service.name (OTEL_SERVICE_NAME would override it). */
static const char *service_name(const struct ctx *x, const struct wh_attrs *attrs)
{
    const struct wh_workload *w = workload(x);
    if (wh_attrs_get(attrs, "service.name")) {
        wh_warnf(x->out->warnings,
                 "OTEL_SERVICE_NAME not injected: " K8S_ANN_ATTRS " sets service.name");
        return NULL;
    }
    const char *v = wh_meta_annotation(x->meta, K8S_ANN_SERVICE_NAME);
    if (!v)
        v = wh_map_get(w->annotations, K8S_ANN_SERVICE_NAME);
    return v && *v ? v : w->name;
}

static int lower_kind_attr(struct wh_attrs *a, const struct wh_workload *w)
{
    char key[96];
    size_t n = k8s_strjoin(key, sizeof(key), "k8s.", w->kind, ".name", NULL);
    for (size_t i = 4; i < n; i++)
        key[i] = (char)tolower((unsigned char)key[i]);
    return wh_attrs_set(a, key, w->name);
}

/* Our resource attributes, then annotations: namespace < workload < pod.
 * k8s.cluster.name follows the identifier, so an adopted identity keeps
 * one cluster name across all containers of the pod. */
static int build_attrs(const struct ctx *x, const struct wh_identity *id, struct wh_attrs *a)
{
    const struct wh_workload *w = workload(x);
    const char *ns = w->ns, *cluster = id->cluster; /* the identifier's, even when adopted */
    int r = 0;
    if (*ns) {
        r = r ? r : wh_attrs_set(a, "service.namespace", ns);
        r = r ? r : wh_attrs_set(a, "k8s.namespace.name", ns);
    }
    r = r ? r : wh_attrs_set_ref(a, "k8s.pod.name", wh_env_name(WH_ENV_POD_NAME));
    r = r ? r : wh_attrs_set_ref(a, "k8s.pod.uid", wh_env_name(WH_ENV_POD_UID));
    r = r ? r : wh_attrs_set_ref(a, "k8s.node.name", wh_env_name(WH_ENV_NODE_NAME));
    if (*cluster)
        r = r ? r : wh_attrs_set(a, "k8s.cluster.name", k8s_mlrun_cluster_short(cluster));
    if (!w->bare_pod && *w->name)
        r = r ? r : lower_kind_attr(a, w);
    const char *from_ns = wh_meta_annotation(&x->ns, K8S_ANN_ATTRS);
    const char *from_wl = wh_map_get(w->annotations, K8S_ANN_ATTRS);
    const char *from_pod = wh_meta_annotation(x->meta, K8S_ANN_ATTRS);
    json_t *warn = x->out->warnings;
    if (r == 0 && from_ns)
        r = wh_attrs_parse(a, from_ns, "namespace annotation " K8S_ANN_ATTRS, warn);
    if (r == 0 && from_wl)
        r = wh_attrs_parse(a, from_wl, "workload annotation " K8S_ANN_ATTRS, warn);
    if (r == 0 && from_pod)
        r = wh_attrs_parse(a, from_pod, "pod annotation " K8S_ANN_ATTRS, warn);
    return r;
}

/* The downward-API items of our volume, (file, fieldPath): the one list
 * both the volume's JSON and the injection hash are made of, at compile
 * time. */
#define VOLUME_ITEMS(X)                                                                            \
    X("labels", "metadata.labels")                                                                 \
    X("annotations", "metadata.annotations")                                                       \
    X("pod_name", "metadata.name")                                                                 \
    X("pod_namespace", "metadata.namespace")                                                       \
    X("pod_uid", "metadata.uid")

#define ITEM_JSON(file, field)                                                                     \
    ",{\"path\":\"" file "\",\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"" field "\"}}"
#define ITEM_HASH(file, field) "volume " file " " field "\n"

/* The patch's values are written as compact JSON text (k8s_jsonpatch_text):
 * {"name":..., "downwardAPI":{"items":[{"path":...,"fieldRef":{...}},...]}} */
static int write_volume(struct k8s_buf *b)
{
    static const char head[] = "{\"name\":\"" WH_VOLUME_NAME "\",\"downwardAPI\":{\"items\":[";
    static const char items[] = VOLUME_ITEMS(ITEM_JSON); /* each after a comma */
    int r = k8s_buf_append(b, head, sizeof(head) - 1);
    r = r ? r : k8s_buf_append(b, items + 1, sizeof(items) - 2);
    return r ? r : k8s_buf_append(b, "]}}", 3);
}

static int write_mount(struct k8s_buf *b)
{
    static const char mount[] =
        "{\"name\":\"" WH_VOLUME_NAME "\",\"mountPath\":\"" WH_MOUNT_PATH "\",\"readOnly\":true}";
    return k8s_buf_append(b, mount, sizeof(mount) - 1);
}

/* The text the injection hash covers: a line per variable, the volume's
 * items and the mount. */
static int injection_text(const struct wh_envset *set, struct k8s_buf *b)
{
    static const char tail[] =
        VOLUME_ITEMS(ITEM_HASH) "mount " WH_VOLUME_NAME " " WH_MOUNT_PATH " ro\n";
    char *room;
    int r = k8s_buf_reserve(b, 2048, &room); /* the typical set at once */
    for (size_t i = 0; i < set->n && r == 0; i++) {
        const struct wh_env_var *v = &set->v[i];
        r = k8s_buf_cat(b, "env ", v->name, "=",
                        v->value ? "" : "fieldRef:", v->value ? v->value : v->field_path, "\n",
                        NULL);
    }
    return r ? r : k8s_buf_append(b, tail, sizeof(tail) - 1);
}

/* The lower-case hex sha256 of the injected config (injection_text). */
static int injection_hash(const struct wh_envset *set, char hex[static K8S_SHA256_HEX_SIZE])
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    int r = injection_text(set, &b);
    if (r == 0)
        k8s_sha256_hex(b.data, b.len, hex);
    k8s_buf_done(&b);
    return r;
}

/* "<version>;<first 12 hex of sha256(injected config)>": the hash covers
 * every injected variable and the volume, so pods injected under
 * different settings are told apart. */
static int injection_value(const struct wh_envset *set, char *out)
{
    static const char version[] = MLD_VERSION ";";
    _Static_assert(sizeof(version) + 12 <= sizeof(((struct wh_mutate_out *)0)->injection),
                   "room for the injection value");
    /* Pods of one workload arrive in bursts with the same injected config:
     * the last one and its hash are kept per thread. The variables' entries
     * tell configs apart (their names and values, unambiguously; the
     * volume's part is constant), so they are what is compared. */
    static __thread char memo[8192];
    static __thread size_t memo_len;
    static __thread char memo_hex[K8S_SHA256_HEX_SIZE];
    if (!memo_len || memo_len != set->entries_len || memcmp(memo, set->entries, memo_len)) {
        int r = injection_hash(set, memo_hex);
        if (r < 0)
            return r;
        memo_len = set->entries_len <= sizeof(memo) ? set->entries_len : 0;
        if (memo_len)
            memcpy(memo, set->entries, memo_len);
    }
    memcpy(out, version, sizeof(version) - 1);
    memcpy(out + sizeof(version) - 1, memo_hex, 12);
    out[sizeof(version) - 1 + 12] = '\0';
    return 0;
}

/* ---------- the patch ---------- */

/* Begin {op, base[mid][/seg], value}: base and mid are pointer text, seg a
 * member name; the value follows in the patch's text. */
static int op_begin(struct ctx *x, const char *name, const char *base, const char *mid,
                    const char *seg)
{
    return k8s_jsonpatch_text_begin_at(&x->out->text, name, base, mid, seg);
}

/* {add, base, value: the one written by w, or [it] when listed} */
static int add_written(struct ctx *x, const char *base, int (*w)(struct k8s_buf *), bool listed)
{
    struct k8s_buf *b = &x->out->text.buf;
    int r = op_begin(x, "add", base, NULL, NULL);
    r = r || !listed ? r : k8s_buf_append(b, "[", 1);
    r = r ? r : w(b);
    r = r || !listed ? r : k8s_buf_append(b, "]", 1);
    return r ? r : k8s_jsonpatch_text_end(&x->out->text);
}

static int patch_annotations(struct ctx *x, const struct wh_identity *id)
{
    const struct wh_ann set[] = {{K8S_ANN_IDENTIFIER, id->identifier, true},
                                 {K8S_ANN_METADATA, id->metadata, true},
                                 {K8S_ANN_INJECTION, x->out->injection, false}};
    return wh_annpatch(x->meta, x->in->path, set, sizeof(set) / sizeof(set[0]), &x->out->text,
                       x->out->warnings);
}

enum mount_state { M_ADD, M_PRESENT, M_TAKEN, M_BAD };

static bool absent(enum wh_shape s)
{
    return s == WH_SHAPE_ABSENT || s == WH_SHAPE_NULL;
}

static enum mount_state mount_state(const struct wh_container *c)
{
    if (absent(c->mounts_shape))
        return M_ADD;
    if (c->mounts_shape != WH_SHAPE_LIST)
        return M_BAD;
    enum mount_state st = M_ADD;
    for (size_t i = 0; i < c->n_mounts; i++) {
        const char *name = c->mounts[i].name, *path = c->mounts[i].mount_path;
        if (name && !strcmp(name, WH_VOLUME_NAME))
            return M_PRESENT;
        if (path && !strcmp(path, WH_MOUNT_PATH))
            st = M_TAKEN;
    }
    return st;
}

static bool has_volume(const struct wh_podspec *ps)
{
    for (size_t i = 0; i < ps->n_volumes; i++)
        if (ps->volumes[i] && !strcmp(ps->volumes[i], WH_VOLUME_NAME))
            return true;
    return false;
}

/* Add the volume when a container will mount it and the pod lacks it;
 * *ret_present says whether the pod has it afterwards. */
static int patch_volume(struct ctx *x, bool needed, bool *ret_present)
{
    enum wh_shape vols = x->ps->volumes_shape;
    char base[400];
    k8s_strjoin(base, sizeof(base), x->in->path, "/spec/volumes", NULL);
    *ret_present = false;
    if (vols == WH_SHAPE_OTHER) {
        wh_warnf(x->out->warnings, "spec.volumes is not a list; " WH_VOLUME_NAME " not mounted");
        return 0;
    }
    if (vols == WH_SHAPE_LIST && has_volume(x->ps)) {
        *ret_present = true;
        return 0;
    }
    if (!needed)
        return 0;
    *ret_present = true;
    if (absent(vols))
        return add_written(x, base, write_volume, true);
    strcat(base, "/-");
    return add_written(x, base, write_volume, false);
}

static int patch_mount(struct ctx *x, const struct target *t, enum mount_state st)
{
    char base[400];
    if (st == M_TAKEN)
        wh_warnf(x->out->warnings,
                 "container %s: " WH_MOUNT_PATH " is already mounted; " WH_VOLUME_NAME
                 " not mounted there",
                 t->name);
    if (st == M_BAD)
        wh_warnf(x->out->warnings, "container %s: volumeMounts is not a list", t->name);
    if (st != M_ADD)
        return 0;
    k8s_strjoin(base, sizeof(base), t->path, "/volumeMounts", NULL);
    if (absent(t->c->mounts_shape))
        return add_written(x, base, write_mount, true);
    strcat(base, "/-");
    return add_written(x, base, write_mount, false);
}

static int patch_containers(struct ctx *x, const struct wh_envset *set)
{
    enum mount_state *st = k8s_arena_malloc(x->in->arena, x->nt * sizeof(*st)); /* set below */
    bool needed = false, present;
    if (!st)
        return -K8S_ENOMEM;
    for (size_t i = 0; i < x->nt; i++) {
        st[i] = mount_state(x->t[i].c);
        needed |= st[i] == M_ADD;
    }
    int r = patch_volume(x, needed, &present);
    bool merge = !(wh_meta_annotation(x->meta, K8S_ANN_ATTRS_MERGE) &&
                   !strcmp(wh_meta_annotation(x->meta, K8S_ANN_ATTRS_MERGE), "false"));
    for (size_t i = 0; i < x->nt && r == 0; i++) {
        size_t before = x->out->text.n;
        int added = 0;
        r = wh_env_patch_text(set, x->t[i].c, x->t[i].path, merge, x->in->arena, &x->out->text,
                              x->out->warnings, &added);
        if (r == 0 && (present || st[i] != M_ADD)) /* adds only with the volume; warns always */
            r = patch_mount(x, &x->t[i], st[i]);
        if (x->out->text.n > before)
            x->out->containers++;
    }
    k8s_arena_release(x->in->arena, st);
    return r;
}

static int identity_of(struct ctx *x, struct wh_identity *id)
{
    int r = wh_identity_adopt(x->meta, id);
    if (r == -K8S_ENOTFOUND)
        r = wh_identity_build(workload(x), wh_config_cluster(x->cfg), x->out->warnings, id);
    if (r == 0) {
        memcpy(x->out->run_id, id->run_id, sizeof(x->out->run_id));
        x->out->missing = id->missing;
    }
    return r;
}

/* The SDK refuses to start without these (DESIGN §3.5): say so. */
static void warn_incomplete(const struct ctx *x)
{
    char names[128];
    if (!x->out->missing)
        return;
    k8s_mlrun_names(x->out->missing, false, names, sizeof(names));
    wh_warn_cat(x->out->warnings, "mldiagnostics: the identity lacks ", names,
                ": the google-cloud-mldiagnostics SDK will refuse to start a run in this pod",
                NULL);
}

static int build_patch(struct ctx *x)
{
    struct wh_identity id = {0};
    struct wh_attrs attrs;
    struct wh_envset set;
    wh_envset_init(&set);
    wh_attrs_init(&attrs);
    int r = identity_of(x, &id);
    if (r == 0)
        r = build_attrs(x, &id, &attrs);
    if (r == 0)
        r = wh_envset_build(&set, x->cfg, &id, service_name(x, &attrs), &attrs);
    if (r == 0)
        r = injection_value(&set, x->out->injection);
    if (r == 0 && wh_attrs_has_prefix(&set.attrs, "rl.") && !id.run_id[0])
        wh_warnf(x->out->warnings, "rl.run.id not added: the ML run id is unknown");
    if (r == 0)
        r = patch_containers(x, &set);
    if (r == 0 && x->out->text.n > 0)
        r = patch_annotations(x, &id);
    if (r == 0 && x->out->text.n > 0)
        warn_incomplete(x);
    if (r == 0 && x->out->text.n == 0)
        set_reason(x->out, "already injected (%s)", x->out->injection);
    wh_envset_done(&set);
    wh_attrs_done(&attrs);
    wh_identity_done(&id);
    return r;
}

int wh_mutate(const struct wh_config *cfg, const struct wh_lookup *lk,
              const struct wh_mutate_in *in, struct wh_mutate_out *ret)
{
    struct ctx *x = k8s_arena_malloc(in->arena, sizeof(*x)); /* set whole below */
    memset(ret, 0, sizeof(*ret));
    k8s_jsonpatch_text_init(&ret->text);
    ret->warnings = json_array();
    int r = x && ret->warnings ? 0 : -K8S_ENOMEM;
    if (r < 0)
        goto out_free_ctx;
    *x = (struct ctx){.cfg = cfg, .lk = lk, .in = in, .out = ret};
    r = read_pod(x);
    if (r < 0 || !shape_ok(x))
        goto out_free_ctx;
    r = decide(x);
    if (r < 0 || !ret->inject)
        goto out_free_ctx;
    r = find_targets(x);
    if (r < 0)
        goto out_free_ctx;
    if (x->nt == 0) {
        ret->inject = false;
        set_reason(ret, "opted in, but no container to inject (skip list: %s)",
                   cfg->skip_containers_flag);
        goto out_free_ctx;
    }
    r = build_patch(x);
out_free_ctx:
    if (x) {
        wh_workload_done(&x->wl);
        wh_pod_done(&x->own);
        wh_meta_done(&x->ns);
        json_decref(x->ns_doc);
        k8s_arena_release(in->arena, x->t);
    }
    k8s_arena_release(in->arena, x);
    if (r == 0 && !in->text_only) { /* the tree, for those that apply or inspect it */
        ret->patch = k8s_jsonpatch_text_tree(&ret->text);
        k8s_jsonpatch_text_done(&ret->text);
        r = ret->patch ? 0 : -K8S_ENOMEM;
    }
    if (r < 0)
        wh_mutate_out_done(ret);
    return r;
}

void wh_mutate_out_done(struct wh_mutate_out *out)
{
    if (!out)
        return;
    json_decref(out->patch);
    json_decref(out->warnings);
    out->patch = out->warnings = NULL;
    k8s_jsonpatch_text_done(&out->text);
}
