#include "wh_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "k8s_arena.h"
#include "k8s_jsonload.h"
#include "k8s_kinds.h"
#include "k8s_log.h"
#include "k8s_store.h"
#include "k8s_time.h"
#include "k8s_watch.h"

#define GET_TTL_NS (60 * K8S_NSEC_PER_SEC)
#define NEG_TTL_NS (5 * K8S_NSEC_PER_SEC)

struct kind_def {
    const char *kind, *prefix, *plural; /* GET: <prefix>[/namespaces/<ns>]/<plural>/<name> */
    const char *resource;               /* "jobs.batch": unique, unlike kind names */
    bool namespaced, watched;
};

/* Namespaces, then every workload kind of the table (k8s_kinds). */
#define NKINDS (1 + K8S_KIND_COUNT)
static struct kind_def kinds[NKINDS];
static pthread_once_t kinds_once = PTHREAD_ONCE_INIT;

static void kinds_init(void)
{
    const struct k8s_kind *n = &k8s_kind_namespace;
    kinds[0] = (struct kind_def){n->kind, n->prefix, n->plural, n->resource, false, true};
    for (size_t i = 0; i < K8S_KIND_COUNT; i++) {
        const struct k8s_kind *k = &k8s_kinds[i];
        kinds[1 + i] =
            (struct kind_def){k->kind,     k->prefix, k->plural,
                              k->resource, true,      (k->flags & K8S_KIND_WEBHOOK_WATCH) != 0};
    }
}

/* What the core reads of a workload or namespace; managedFields and the
 * rest of the metadata are not kept. */
static const struct k8s_json_filter meta_keep[] = {{"name", NULL},
                                                   {"namespace", NULL},
                                                   {"uid", NULL},
                                                   {"labels", NULL},
                                                   {"annotations", NULL},
                                                   {"creationTimestamp", NULL},
                                                   {"ownerReferences", NULL},
                                                   {"resourceVersion", NULL},
                                                   {NULL}};
static const struct k8s_json_filter object_keep[] = {{"metadata", meta_keep}, {NULL}};

struct kind_cache {
    const struct kind_def *def;
    struct wh_cache *owner;
    struct k8s_store *store;
    struct k8s_watch *watch;
    char resource[96];
};

/* One GET in progress; later askers wait for its answer. */
struct flight {
    char key[600];
    bool done;
    int rc;
    struct k8s_error err;
    json_t *meta;
    int refs;
    struct flight *next;
};

struct wh_cache {
    struct k8s_client *client;
    struct wh_cache_opts opts;
    struct kind_cache kc[NKINDS];
    struct wh_lookup lookup;
    pthread_mutex_t mu; /* flights and the TTL map */
    pthread_cond_t landed;
    struct flight *flights;
    json_t *ttl; /* "resource/ns/name" → [expiry ns, metadata or null] */
    struct k8s_metric *gets_ok, *gets_missing, *gets_failed;
};

/* The definition of a row of the table, or of the Namespace kind. */
static const struct kind_def *kind_of(const struct k8s_kind *k)
{
    if (k == &k8s_kind_namespace)
        return &kinds[0];
    if (k >= k8s_kinds && k < k8s_kinds + K8S_KIND_COUNT)
        return &kinds[1 + (k - k8s_kinds)];
    return NULL;
}

/* ---------- watch edge: log state changes once ---------- */

static void on_state(void *ud, enum k8s_watch_state st, const struct k8s_error *err)
{
    struct kind_cache *k = ud;
    switch (st) {
    case K8S_WATCH_SYNCED:
        k8s_log_json(K8S_LOG_DEBUG, "cache synced",
                     json_pack("{s:s, s:I}", "resource", k->resource, "objects",
                               (json_int_t)k8s_store_size(k->store)));
        break;
    case K8S_WATCH_ABSENT:
        k8s_log_json(K8S_LOG_INFO, "resource not served (CRD not installed?): treated as empty",
                     json_pack("{s:s}", "resource", k->resource));
        break;
    case K8S_WATCH_RELISTING:
        k8s_log_json(K8S_LOG_DEBUG, "watch expired; listing again",
                     json_pack("{s:s}", "resource", k->resource));
        break;
    case K8S_WATCH_FAILED:
        k8s_log_json(
            K8S_LOG_WARN, "watch failed; retrying",
            json_pack("{s:s, s:s}", "resource", k->resource, "error", err ? err->message : ""));
        break;
    }
}

/* What an admission gets: its own copy of the metadata. A value shared
 * between threads is freed by whichever drops the last reference, and
 * jansson's release-only decrement does not order that free after the
 * other threads' reads (k8s_store_release); what the mutation core holds,
 * members included, is then never shared. */
static int hand_out(const json_t *meta, json_t **ret, struct k8s_error *err)
{
    json_t *copy = json_deep_copy(meta);
    if (!copy)
        return k8s_error_set(err, -K8S_ENOMEM, "out of memory");
    *ret = copy;
    return 0;
}

/* ---------- the miss path ---------- */

static void object_path(const struct kind_def *d, const char *ns, const char *name, char *out,
                        size_t cap)
{
    if (d->namespaced)
        snprintf(out, cap, "%s/namespaces/%s/%s/%s", d->prefix, ns, d->plural, name);
    else
        snprintf(out, cap, "%s/%s/%s", d->prefix, d->plural, name);
}

/* GET the object's metadata (the caller paused the arena). */
static int get_meta(struct wh_cache *c, const struct kind_def *d, const char *ns, const char *name,
                    int64_t timeout_ms, json_t **ret, struct k8s_error *err)
{
    char path[1024];
    object_path(d, ns, name, path, sizeof(path));
    struct k8s_req rq = {.method = "GET",
                         .path = path,
                         .accept = K8S_ACCEPT_META,
                         .timeout_ms = timeout_ms,
                         .max_bytes = 4 << 20};
    struct k8s_resp resp = {0};
    json_t *obj = NULL;
    int r = k8s_client_do(c->client, &rq, &resp, err);
    r = r ? r : k8s_json_load_filtered(resp.body, resp.len, object_keep, &obj, err);
    k8s_resp_done(&resp);
    if (r == 0 && !json_is_object(json_object_get(obj, "metadata"))) {
        json_decref(obj);
        r = k8s_error_set(err, -K8S_EPARSE, "GET %s: no metadata", path);
    }
    if (r == 0)
        *ret = obj;
    k8s_metric_add(r == 0 ? c->gets_ok : r == -K8S_ENOTFOUND ? c->gets_missing : c->gets_failed, 1);
    return r;
}

/* Remember the answer: watched kinds in their store, others (and "not
 * found") in the TTL map. Returns the metadata to hand out (new ref). */
static json_t *remember(struct wh_cache *c, const struct kind_def *d, const char *key, int rc,
                        json_t *obj)
{
    json_t *meta = NULL;
    if (rc == 0 && d->watched) {
        size_t i = (size_t)(d - kinds);
        json_t *stored = k8s_store_put_if_absent_new(c->kc[i].store, obj);
        meta = json_deep_copy(json_object_get(stored, "metadata")); /* not a member of stored */
        k8s_store_release(stored);
        return meta;
    }
    if (rc == 0 || rc == -K8S_ENOTFOUND) {
        int64_t exp = k8s_mono_ns() + (rc == 0 ? GET_TTL_NS : NEG_TTL_NS);
        meta = rc == 0 ? json_incref(json_object_get(obj, "metadata")) : NULL;
        pthread_mutex_lock(&c->mu);
        json_object_set_new(c->ttl, key, json_pack("[I, O?]", (json_int_t)exp, meta));
        pthread_mutex_unlock(&c->mu);
    }
    json_decref(obj);
    return meta;
}

/* A fresh TTL entry: 0 and *ret (a copy), -K8S_ENOTFOUND, -K8S_ENOMEM, or
 * 1 (none). */
static int ttl_lookup(struct wh_cache *c, const char *key, json_t **ret)
{
    int r = 1;
    pthread_mutex_lock(&c->mu);
    json_t *e = json_object_get(c->ttl, key);
    if (e && json_integer_value(json_array_get(e, 0)) > k8s_mono_ns()) {
        json_t *meta = json_array_get(e, 1);
        r = json_is_null(meta) ? -K8S_ENOTFOUND : 0;
        if (r == 0)
            r = hand_out(meta, ret, NULL);
    } else if (e) {
        json_object_del(c->ttl, key);
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}

static struct flight *find_flight(struct wh_cache *c, const char *key)
{
    for (struct flight *f = c->flights; f; f = f->next)
        if (!strcmp(f->key, key))
            return f;
    return NULL;
}

static void unref_flight(struct wh_cache *c, struct flight *f)
{
    if (--f->refs > 0)
        return;
    json_decref(f->meta);
    free(f);
}

/* Wait for another thread's GET of the same object (mu held). */
static int join_flight(struct wh_cache *c, struct flight *f, int64_t deadline_ns, json_t **ret,
                       struct k8s_error *err)
{
    struct timespec until = {deadline_ns / K8S_NSEC_PER_SEC, deadline_ns % K8S_NSEC_PER_SEC};
    f->refs++;
    while (!f->done && pthread_cond_timedwait(&c->landed, &c->mu, &until) == 0)
        ;
    int r = f->done ? f->rc : k8s_error_set(err, -K8S_ETIMEDOUT, "waiting for %s", f->key);
    if (f->done && r == 0)
        r = hand_out(f->meta, ret, err);
    else if (f->done && err)
        *err = f->err;
    unref_flight(c, f);
    return r;
}

/* Lead the GET for key; everyone waiting gets the same answer. */
static int lead_flight(struct wh_cache *c, const struct kind_def *d, const char *ns,
                       const char *name, const char *key, int64_t deadline_ns, json_t **ret,
                       struct k8s_error *err)
{
    struct flight *f = calloc(1, sizeof(*f));
    if (!f) {
        pthread_mutex_unlock(&c->mu);
        return k8s_error_set(err, -K8S_ENOMEM, "out of memory");
    }
    snprintf(f->key, sizeof(f->key), "%s", key);
    f->refs = 1;
    f->next = c->flights;
    c->flights = f;
    pthread_mutex_unlock(&c->mu);
    int64_t left_ms = (deadline_ns - k8s_mono_ns()) / K8S_NSEC_PER_MSEC - 20;
    int64_t cap = c->opts.fetch_timeout_ms;
    json_t *obj = NULL;
    /* the answer outlives this request: what jansson makes for the store
     * and the TTL map must not come from the request's arena (k8s_store
     * leaves that to its callers) */
    struct k8s_arena *a = k8s_arena_pause();
    int r = left_ms < 10 ? k8s_error_set(&f->err, -K8S_ETIMEDOUT, "no time left for GET %s", key)
                         : get_meta(c, d, ns, name, left_ms < cap ? left_ms : cap, &obj, &f->err);
    json_t *meta = remember(c, d, key, r, obj);
    k8s_arena_resume(a);
    pthread_mutex_lock(&c->mu);
    for (struct flight **pp = &c->flights; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    f->done = true;
    f->rc = r;
    f->meta = meta;
    pthread_cond_broadcast(&c->landed);
    if (r == 0)
        r = hand_out(meta, ret, err);
    else if (err)
        *err = f->err;
    unref_flight(c, f);
    pthread_mutex_unlock(&c->mu);
    return r;
}

static int fetch(struct wh_cache *c, const struct kind_def *d, const char *ns, const char *name,
                 int64_t deadline_ns, json_t **ret, struct k8s_error *err)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s/%s", d->resource, ns, name);
    int r = ttl_lookup(c, key, ret); /* others' GETs; "not found" of any kind */
    if (r == -K8S_ENOTFOUND || r == -K8S_ENOMEM)
        return r == -K8S_ENOMEM ? k8s_error_set(err, r, "out of memory")
                                : k8s_error_set(err, r, "%s %s/%s not found", d->kind, ns, name);
    if (r != 1)
        return r;
    pthread_mutex_lock(&c->mu);
    struct flight *f = find_flight(c, key);
    if (f) {
        r = join_flight(c, f, deadline_ns, ret, err);
        pthread_mutex_unlock(&c->mu);
        return r;
    }
    return lead_flight(c, d, ns, name, key, deadline_ns, ret, err); /* unlocks */
}

/* ---------- the lookup ops ---------- */

static int lookup_meta(void *ud, const struct k8s_kind *kind, const char *ns, const char *name,
                       int64_t deadline_ns, json_t **ret_meta, struct k8s_error *err)
{
    struct wh_cache *c = ud;
    const struct kind_def *d = kind_of(kind);
    if (!d || !name || !*name)
        return k8s_error_set(err, -K8S_EUNAVAIL, "%s is not looked up",
                             kind ? kind->kind : "(no kind)");
    struct kind_cache *k = &c->kc[d - kinds];
    const char *where = d->namespaced ? ns : "";
    if (d->watched) {
        json_t *obj = k8s_store_get(k->store, where, name);
        if (obj) { /* the steady state: no API call */
            int r = hand_out(json_object_get(obj, "metadata"), ret_meta, err);
            k8s_store_release(obj);
            return r;
        }
    }
    /* a miss; for a kind not served at the last list too: its CRD may have
     * been created since, and a pod naming one suggests it was */
    int r = fetch(c, d, where, name, deadline_ns, ret_meta, err);
    if (r == -K8S_ENOTFOUND && d->watched && k8s_watch_absent(k->watch))
        r = k8s_error_set(err, -K8S_EUNAVAIL, "%s is not served (CRD not installed)", k->resource);
    return r;
}

/* ---------- lifecycle and metrics ---------- */

static double synced_of(void *ud)
{
    struct kind_cache *k = ud;
    return k->watch && k8s_watch_synced(k->watch) ? 1 : 0;
}

static double size_of(void *ud)
{
    struct kind_cache *k = ud;
    return (double)k8s_store_size(k->store);
}

static double restarts_of(void *ud)
{
    struct kind_cache *k = ud;
    return k->watch ? (double)k8s_watch_restarts(k->watch) : 0;
}

static void register_metrics(struct wh_cache *c, struct k8s_metrics *m)
{
    c->gets_ok = k8s_metrics_counter(m, "mldiagnostics_webhook_api_lookups_total",
                                     "API server GETs made on the admission path (cache misses).",
                                     "result=\"found\"");
    c->gets_missing = k8s_metrics_counter(
        m, "mldiagnostics_webhook_api_lookups_total",
        "API server GETs made on the admission path (cache misses).", "result=\"not_found\"");
    c->gets_failed = k8s_metrics_counter(
        m, "mldiagnostics_webhook_api_lookups_total",
        "API server GETs made on the admission path (cache misses).", "result=\"error\"");
    for (size_t i = 0; i < NKINDS; i++) {
        if (!kinds[i].watched)
            continue;
        char labels[96];
        snprintf(labels, sizeof(labels), "resource=\"%s\"", kinds[i].plural);
        k8s_metrics_gauge_fn(m, "mldiagnostics_webhook_cache_synced",
                             "1 once the resource's initial list is in the cache.", labels,
                             synced_of, &c->kc[i]);
        k8s_metrics_gauge_fn(m, "mldiagnostics_webhook_cache_objects",
                             "Objects in the resource's cache.", labels, size_of, &c->kc[i]);
        k8s_metrics_gauge_fn(m, "mldiagnostics_webhook_watch_starts",
                             "Watches started (a restart after each stream end or failure).",
                             labels, restarts_of, &c->kc[i]);
    }
}

static int start_watch(struct wh_cache *c, struct kind_cache *k)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", k->def->prefix, k->def->plural);
    struct k8s_watch_spec spec = {.resource = k->resource,
                                  .path = path,
                                  .metadata_only = true,
                                  .filter = object_keep,
                                  .absent_retry_ms = c->opts.absent_retry_ms,
                                  .watch_timeout_min_s = c->opts.watch_timeout_min_s,
                                  .watch_timeout_max_s = c->opts.watch_timeout_max_s};
    struct k8s_watch_hooks hooks = {.state = on_state, .ud = k};
    return k8s_watch_start(c->client, &spec, k->store, &hooks, &k->watch);
}

int wh_cache_start(struct k8s_client *client, const struct wh_cache_opts *opts,
                   struct wh_cache **ret)
{
    pthread_once(&kinds_once, kinds_init);
    struct wh_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return -K8S_ENOMEM;
    c->client = client;
    c->opts = *opts;
    if (!c->opts.fetch_timeout_ms)
        c->opts.fetch_timeout_ms = 1000;
    c->lookup = (struct wh_lookup){.get_meta = lookup_meta, .ud = c};
    c->ttl = json_object();
    pthread_mutex_init(&c->mu, NULL);
    k8s_cond_init_mono(&c->landed);
    int r = c->ttl ? 0 : -K8S_ENOMEM;
    for (size_t i = 0; i < NKINDS && r == 0; i++) {
        struct kind_cache *k = &c->kc[i];
        k->def = &kinds[i];
        k->owner = c;
        snprintf(k->resource, sizeof(k->resource), "%s", kinds[i].plural);
        r = (k->store = k8s_store_new()) ? 0 : -K8S_ENOMEM;
    }
    if (r == 0 && opts->metrics)
        register_metrics(c, opts->metrics);
    for (size_t i = 0; i < NKINDS && r == 0; i++)
        if (kinds[i].watched)
            r = start_watch(c, &c->kc[i]);
    if (r < 0) {
        wh_cache_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

void wh_cache_free(struct wh_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < NKINDS; i++) {
        k8s_watch_free(c->kc[i].watch);
        k8s_store_free(c->kc[i].store);
    }
    json_decref(c->ttl);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->landed);
    free(c);
}

bool wh_cache_synced(void *cache)
{
    struct wh_cache *c = cache;
    for (size_t i = 0; i < NKINDS; i++)
        if (kinds[i].watched && !(c->kc[i].watch && k8s_watch_synced(c->kc[i].watch)))
            return false;
    return true;
}

const struct wh_lookup *wh_cache_lookup(struct wh_cache *c)
{
    return &c->lookup;
}
