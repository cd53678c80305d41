#include "k8s_watch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "k8s_buf.h"
#include "k8s_curl.h"
#include "k8s_jget.h"
#include "k8s_time.h"

#define PAGE             500
#define HEALTHY_RESET_NS (120 * K8S_NSEC_PER_SEC)

struct k8s_watch {
    struct k8s_client *c;
    struct k8s_watch_spec spec;
    char *resource, *path, *selector; /* owned copies of the spec's strings */
    struct k8s_store *store;
    struct k8s_watch_hooks hooks;
    struct k8s_json_filter ev_filter[3], list_filter[3];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;                           /* set by k8s_watch_free: atomic */
    bool synced, absent;                /* written by the thread, read by any: atomic */
    uint64_t lists, restarts, failures; /* likewise */
    char rv[64];
    int64_t backoff_ms, healthy_since;
    unsigned seed;
    /* per stream */
    int events, progress, error_code; /* progress: events other than ERROR */
    struct k8s_error stream_err;
    bool stream_failed;
};

/* ---------- wire format ---------- */

static const struct {
    const char *name;
    enum k8s_watch_wire type;
} wire_types[] = {{"ADDED", K8S_WIRE_ADDED},
                  {"MODIFIED", K8S_WIRE_MODIFIED},
                  {"DELETED", K8S_WIRE_DELETED},
                  {"BOOKMARK", K8S_WIRE_BOOKMARK},
                  {"ERROR", K8S_WIRE_ERROR}};

int k8s_watch_decode(const char *line, size_t len, const struct k8s_json_filter *filter,
                     struct k8s_watch_event *ret, struct k8s_error *reterr)
{
    const struct k8s_json_filter f[] = {{"type", NULL}, {"object", filter}, {NULL}};
    json_t *ev = NULL;
    int r = k8s_json_load_filtered(line, len, f, &ev, reterr);
    if (r < 0)
        return r;
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    size_t i = 0;
    while (type && i < sizeof(wire_types) / sizeof(wire_types[0]) &&
           strcmp(type, wire_types[i].name))
        i++;
    if (!type || i == sizeof(wire_types) / sizeof(wire_types[0]) || !json_is_object(obj)) {
        const char *what = !json_is_object(obj) ? "no object" : "an unknown type";
        json_decref(ev); /* obj was borrowed from ev: not touched past this point */
        return k8s_error_set(reterr, -K8S_EPARSE, "watch event with %s", what);
    }
    if (wire_types[i].type == K8S_WIRE_ERROR && filter) { /* the Status, whole */
        json_decref(ev);
        return k8s_watch_decode(line, len, NULL, ret, reterr);
    }
    struct k8s_watch_event out = {.type = wire_types[i].type, .object = json_incref(obj)};
    const char *rv = k8s_jstr2(obj, "metadata", "resourceVersion");
    snprintf(out.rv, sizeof(out.rv), "%s", rv ? rv : "");
    if (out.type == K8S_WIRE_ERROR)
        out.code = (int)json_integer_value(json_object_get(obj, "code"));
    json_decref(ev);
    *ret = out;
    return 0;
}

/* ---------- helpers ---------- */

static bool stopping(const struct k8s_watch *w)
{
    return __atomic_load_n(&w->stop, __ATOMIC_ACQUIRE);
}

static void count(uint64_t *counter)
{
    __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

static void report(struct k8s_watch *w, enum k8s_watch_state st, const struct k8s_error *err)
{
    if (w->hooks.state)
        w->hooks.state(w->hooks.ud, st, err);
}

/* Sleep ms unless stopped. */
static void nap(struct k8s_watch *w, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&w->mu);
    while (!stopping(w) && pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&w->mu);
}

/* Jittered exponential backoff (client-go: factor 2, jitter 1.0, cap), and
 * never sooner than the server's Retry-After. */
static void back_off(struct k8s_watch *w, const struct k8s_error *err)
{
    int64_t now = k8s_mono_ns();
    if (now - w->healthy_since > HEALTHY_RESET_NS)
        w->backoff_ms = w->spec.backoff_initial_ms;
    int64_t ms = w->backoff_ms + (int64_t)(rand_r(&w->seed) % (unsigned)(w->backoff_ms + 1));
    if (ms > w->spec.backoff_max_ms) /* jittered, yet never past the cap */
        ms = w->spec.backoff_max_ms;
    if (err && err->retry_after_s > 0 && ms < err->retry_after_s * 1000LL)
        ms = err->retry_after_s * 1000LL;
    w->backoff_ms =
        w->backoff_ms * 2 > w->spec.backoff_max_ms ? w->spec.backoff_max_ms : w->backoff_ms * 2;
    nap(w, ms);
    w->healthy_since = k8s_mono_ns();
}

static int append_param(struct k8s_buf *b, const char *name, const char *value)
{
    char *enc = k8s_curl.easy_escape(NULL, value, 0);
    if (!enc)
        return -K8S_ENOMEM;
    int r = k8s_buf_cat(b, strchr(b->data ? b->data : "", '?') ? "&" : "?", name, "=", enc, NULL);
    k8s_curl.free(enc);
    return r;
}

/* ---------- list ---------- */

/* A difference a relist found: what the gap in the watch hid. */
static void on_diff(void *ud, const char *key, const json_t *before, const json_t *after)
{
    struct k8s_watch *w = ud;
    enum k8s_watch_event_type ev = !after   ? K8S_EV_DELETED
                                   : before ? K8S_EV_MODIFIED
                                            : K8S_EV_ADDED;
    w->hooks.relisted(w->hooks.ud, ev, key, after ? after : before);
}

/* The store's content becomes staging (stolen); every difference goes to
 * the relisted hook. */
static void replace(struct k8s_watch *w, json_t *staging)
{
    k8s_store_replace_diff(w->store, staging, w->hooks.relisted ? on_diff : NULL, w);
}

/* One page; stages its items, sets *cont (possibly "") and the list RV. */
static int list_page(struct k8s_watch *w, const char *cont, json_t *items, char *next,
                     size_t next_cap, struct k8s_error *err)
{
    struct k8s_buf path;
    char limit[16];
    snprintf(limit, sizeof(limit), "%d", PAGE);
    k8s_buf_init(&path, 8192);
    int r = k8s_buf_appends(&path, w->path);
    r = r ? r : append_param(&path, "limit", limit);
    if (r == 0 && *cont)
        r = append_param(&path, "continue", cont);
    if (r == 0 && w->selector)
        r = append_param(&path, "labelSelector", w->selector);
    struct k8s_req rq = {.method = "GET",
                         .path = k8s_buf_str(&path),
                         .timeout_ms = K8S_WATCH_LIST_TIMEOUT_MS,
                         .accept = w->spec.metadata_only ? K8S_ACCEPT_META_LIST : NULL};
    struct k8s_resp resp = {0};
    json_t *page = NULL;
    r = r ? r : k8s_client_do(w->c, &rq, &resp, err);
    r = r ? r : k8s_json_load_filtered(resp.body, resp.len, w->list_filter, &page, err);
    if (r == 0) {
        const json_t *meta = json_object_get(page, "metadata");
        const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
        const char *c = json_string_value(json_object_get(meta, "continue"));
        snprintf(w->rv, sizeof(w->rv), "%s", rv ? rv : "");
        snprintf(next, next_cap, "%s", c ? c : "");
        size_t i;
        json_t *obj;
        json_array_foreach(json_object_get(page, "items"), i, obj)
            k8s_store_stage(w->store, items, obj); /* page by page: only the kept form stays */
    }
    json_decref(page);
    k8s_resp_done(&resp);
    k8s_buf_done(&path);
    return r;
}

/* Every page, staged into *ret (new: key → the store's form; NULL on
 * failure); an expired continue token restarts the list once. Publishes
 * nothing: the caller orders the store and the flags. */
static int list_all(struct k8s_watch *w, json_t **ret, struct k8s_error *err)
{
    char cont[4096] = "", next[4096];
    json_t *items = json_object();
    int r = items ? 0 : -K8S_ENOMEM, restarts = 0;
    while (r == 0 && !stopping(w)) {
        r = list_page(w, cont, items, next, sizeof(next), err);
        if (r == -K8S_EGONE && *cont && restarts++ == 0) {
            json_object_clear(items);
            cont[0] = '\0';
            r = 0;
            continue;
        }
        if (r < 0 || !*next)
            break;
        memcpy(cont, next, sizeof(cont));
    }
    if (r < 0 || stopping(w)) {
        json_decref(items);
        return stopping(w) ? -K8S_ETERMINAL : r;
    }
    *ret = items;
    return 0;
}

/* ---------- watch ---------- */

static void apply(struct k8s_watch *w, struct k8s_watch_event *ev)
{
    w->progress++;
    if (ev->rv[0] && ev->type != K8S_WIRE_ERROR)
        snprintf(w->rv, sizeof(w->rv), "%s", ev->rv);
    if (ev->type == K8S_WIRE_ADDED || ev->type == K8S_WIRE_MODIFIED)
        k8s_store_put_new(w->store, json_incref(ev->object));
    else if (ev->type == K8S_WIRE_DELETED)
        k8s_store_remove(w->store, ev->object);
    if (ev->type <= K8S_WIRE_DELETED && w->hooks.changed)
        w->hooks.changed(w->hooks.ud, (enum k8s_watch_event_type)ev->type, ev->object);
}

static int on_line(void *ud, const char *line, size_t len)
{
    struct k8s_watch *w = ud;
    struct k8s_watch_event ev;
    if (k8s_watch_decode(line, len, w->ev_filter[1].keep, &ev, &w->stream_err) < 0) {
        w->stream_failed = true;
        return 1;
    }
    w->events++;
    if (ev.type == K8S_WIRE_ERROR) {
        w->error_code = ev.code ? ev.code : 500;
        const char *msg = json_string_value(json_object_get(ev.object, "message"));
        k8s_error_set(&w->stream_err, ev.code == 410 ? -K8S_EGONE : -K8S_ESERVER, "watch %s: %s",
                      w->resource, msg ? msg : "ERROR event");
        json_decref(ev.object);
        return 1;
    }
    apply(w, &ev);
    json_decref(ev.object);
    return 0;
}

static int watch_once(struct k8s_watch *w, struct k8s_error *err)
{
    int64_t lo = w->spec.watch_timeout_min_s, hi = w->spec.watch_timeout_max_s;
    char timeout[24];
    snprintf(timeout, sizeof(timeout), "%lld",
             (long long)(lo + (hi > lo ? rand_r(&w->seed) % (unsigned)(hi - lo + 1) : 0)));
    struct k8s_buf path;
    k8s_buf_init(&path, 8192);
    int r = k8s_buf_appends(&path, w->path);
    r = r ? r : append_param(&path, "watch", "1");
    r = r ? r : append_param(&path, "allowWatchBookmarks", "true");
    r = r ? r : append_param(&path, "resourceVersion", w->rv);
    r = r ? r : append_param(&path, "timeoutSeconds", timeout);
    if (r == 0 && w->selector)
        r = append_param(&path, "labelSelector", w->selector);
    struct k8s_req rq = {.method = "GET",
                         .path = k8s_buf_str(&path),
                         .timeout_ms = (atoll(timeout) + 30) * 1000,
                         .accept = w->spec.metadata_only ? K8S_ACCEPT_META : NULL};
    w->events = w->progress = 0;
    w->error_code = 0;
    w->stream_failed = false;
    r = r ? r : k8s_client_stream(w->c, &rq, on_line, w, &w->stop, err);
    k8s_buf_done(&path);
    if (r == 0 && (w->error_code || w->stream_failed)) {
        *err = w->stream_err;
        r = w->error_code == 410 ? -K8S_EGONE : w->stream_failed ? -K8S_EPARSE : -K8S_ESERVER;
    }
    return r;
}

/* ---------- the loop ---------- */

/* List until it works (or stop). Returns false when stopped.
 * Publication order, so that what a reader sees is always consistent:
 * absent is cleared before the listed objects reach the store and set only
 * after the store was emptied (no object is ever visible while absent
 * reads true); synced is set after the store holds the first list. */
static bool sync_list(struct k8s_watch *w)
{
    while (!stopping(w)) {
        struct k8s_error err = {0};
        json_t *items = NULL;
        int r = list_all(w, &items, &err);
        count(&w->lists);
        if (r == 0) {
            __atomic_store_n(&w->absent, false, __ATOMIC_RELEASE);
            replace(w, items);
            __atomic_store_n(&w->synced, true, __ATOMIC_RELEASE);
            report(w, K8S_WATCH_SYNCED, NULL);
            if (w->hooks.listed)
                w->hooks.listed(w->hooks.ud);
            return true;
        }
        if (r == -K8S_ENOTFOUND) { /* the resource is not served: empty, synced, later again */
            replace(w, json_object());
            bool was = w->absent;
            __atomic_store_n(&w->absent, true, __ATOMIC_RELEASE);
            __atomic_store_n(&w->synced, true, __ATOMIC_RELEASE);
            if (!was)
                report(w, K8S_WATCH_ABSENT, &err);
            nap(w, w->spec.absent_retry_ms);
            continue;
        }
        count(&w->failures);
        if (r != -K8S_ETERMINAL)
            report(w, K8S_WATCH_FAILED, &err);
        back_off(w, &err);
    }
    return false;
}

/* Watch until the resource version expires or a failure calls for a list. */
static void watch_loop(struct k8s_watch *w)
{
    while (!stopping(w)) {
        struct k8s_error err = {0};
        int64_t t0 = k8s_mono_ns();
        count(&w->restarts);
        int r = watch_once(w, &err);
        if (stopping(w))
            return;
        bool brief = k8s_mono_ns() - t0 < K8S_NSEC_PER_SEC && w->events == 0;
        if (r == 0 && !brief)
            continue; /* the server's timeout: watch on from where we are */
        if (r == -K8S_EGONE) {
            report(w, K8S_WATCH_RELISTING, &err);
            return;
        }
        count(&w->failures);
        if (r == 0)
            k8s_error_set(&err, -K8S_EIO, "watch %s ended at once without events", w->resource);
        report(w, K8S_WATCH_FAILED, &err);
        if (w->progress) /* it worked until it broke: no reason to wait long */
            w->backoff_ms = w->spec.backoff_initial_ms;
        back_off(w, &err);
        bool rewatch =
            r == -K8S_ETHROTTLED || r == -K8S_ESERVER || r == -K8S_EIO || r == -K8S_ETIMEDOUT;
        if (!rewatch) /* anything else: list again (client-go's rule) */
            return;
    }
}

static void *watch_main(void *arg)
{
    struct k8s_watch *w = arg;
    while (!stopping(w) && sync_list(w))
        if (!w->absent)
            watch_loop(w);
    return NULL;
}

/* ---------- lifecycle ---------- */

static void defaults(struct k8s_watch_spec *s)
{
    if (!s->absent_retry_ms)
        s->absent_retry_ms = 10000;
    if (!s->watch_timeout_min_s)
        s->watch_timeout_min_s = 300;
    if (!s->watch_timeout_max_s)
        s->watch_timeout_max_s = 600;
    if (!s->backoff_initial_ms)
        s->backoff_initial_ms = 800;
    if (!s->backoff_max_ms)
        s->backoff_max_ms = 30000;
}

int k8s_watch_start(struct k8s_client *c, const struct k8s_watch_spec *spec,
                    struct k8s_store *store, const struct k8s_watch_hooks *hooks,
                    struct k8s_watch **ret)
{
    struct k8s_watch *w = calloc(1, sizeof(*w));
    if (!w)
        return -K8S_ENOMEM;
    w->c = c;
    w->spec = *spec;
    defaults(&w->spec);
    w->store = store;
    if (hooks)
        w->hooks = *hooks;
    w->resource = strdup(spec->resource ? spec->resource : spec->path);
    w->path = strdup(spec->path);
    w->selector = spec->label_selector ? strdup(spec->label_selector) : NULL;
    w->ev_filter[0] = (struct k8s_json_filter){"type", NULL};
    w->ev_filter[1] = (struct k8s_json_filter){"object", spec->filter};
    w->list_filter[0] = (struct k8s_json_filter){"metadata", NULL};
    w->list_filter[1] = (struct k8s_json_filter){"items", spec->filter};
    w->backoff_ms = w->spec.backoff_initial_ms;
    w->healthy_since = k8s_mono_ns();
    w->seed = (unsigned)k8s_mono_ns();
    pthread_mutex_init(&w->mu, NULL);
    k8s_cond_init_mono(&w->cv);
    if (!w->resource || !w->path || (spec->label_selector && !w->selector) ||
        pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        free(w->resource);
        free(w->path);
        free(w->selector);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        return -K8S_EIO;
    }
    *ret = w;
    return 0;
}

void k8s_watch_free(struct k8s_watch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->resource);
    free(w->path);
    free(w->selector);
    free(w);
}

bool k8s_watch_synced(const struct k8s_watch *w)
{
    return __atomic_load_n(&w->synced, __ATOMIC_ACQUIRE);
}

bool k8s_watch_absent(const struct k8s_watch *w)
{
    return __atomic_load_n(&w->absent, __ATOMIC_ACQUIRE);
}

uint64_t k8s_watch_lists(const struct k8s_watch *w)
{
    return __atomic_load_n(&w->lists, __ATOMIC_RELAXED);
}

uint64_t k8s_watch_restarts(const struct k8s_watch *w)
{
    return __atomic_load_n(&w->restarts, __ATOMIC_RELAXED);
}

uint64_t k8s_watch_failures(const struct k8s_watch *w)
{
    return __atomic_load_n(&w->failures, __ATOMIC_RELAXED);
}
