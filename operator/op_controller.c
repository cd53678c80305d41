#include "op_controller.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_kinds.h"
#include "k8s_log.h"
#include "k8s_names.h"
#include "k8s_store.h"
#include "k8s_time.h"
#include "k8s_watch.h"
#include "op_audit.h"
#include "op_capture.h"
#include "k8s_manager.h"
#include "op_map.h"
#include "op_pod.h"
#include "k8s_queue.h"
#include "op_relay.h"
#include "op_status.h"
#include "k8s_ticker.h"

#define QUEUE_MAX_DELAY (30 * K8S_NSEC_PER_SEC)

/* then one source per workloadRef kind of the kind table (k8s_kinds) */
enum src_kind {
    SRC_CONNS,
    SRC_PODS,
    SRC_NAMESPACES,
    SRC_WORKLOAD,
    N_SRC = SRC_WORKLOAD + K8S_KIND_REF_COUNT
};

/* ---------- what each cache keeps ---------- */

static const struct k8s_json_filter opt_label[] = {{K8S_LABEL_MANAGED, NULL}, {NULL}};
static const struct k8s_json_filter wl_meta[] = {
    {"name", NULL},        {"namespace", NULL},       {"uid", NULL}, {"resourceVersion", NULL},
    {"labels", opt_label}, {"ownerReferences", NULL}, {NULL}};
static const struct k8s_json_filter ns_labels[] = {
    {K8S_LABEL_MANAGED, NULL}, {K8S_LABEL_EXEMPT, NULL}, {NULL}};
static const struct k8s_json_filter ns_meta[] = {
    {"name", NULL}, {"resourceVersion", NULL}, {"labels", ns_labels}, {NULL}};
static const struct k8s_json_filter ns_keep[] = {{"metadata", ns_meta}, {NULL}};
/* a capture's: what the reconciler reads and a status write sends back
 * (the status subresource ignores the rest); managedFields, labels and
 * annotations stay out of the cache */
static const struct k8s_json_filter conn_meta[] = {{"name", NULL},
                                                   {"namespace", NULL},
                                                   {"uid", NULL},
                                                   {"resourceVersion", NULL},
                                                   {"generation", NULL},
                                                   {"deletionTimestamp", NULL},
                                                   {"ownerReferences", NULL},
                                                   {"creationTimestamp", NULL},
                                                   {NULL}};
static const struct k8s_json_filter conn_keep[] = {
    {"metadata", conn_meta}, {"spec", NULL}, {"status", NULL}, {NULL}};
/* a workload's metadata, and the status field its pods are found by */
static struct k8s_json_filter wl_status[K8S_KIND_REF_COUNT][2];
static struct k8s_json_filter wl_keep[K8S_KIND_REF_COUNT][3];

/* The watch sources, as controller-runtime registers them: what to watch
 * and keep, and the mapper from an event to the keys it queues (map;
 * NULL: op_map_namespace, the unfinished captures a pod or workload of
 * that namespace may be waiting for). relisted: what a relist found
 * changed is mapped too (a gap in the watch hid it). optional: read by
 * the audit only, never waited for (the namespace label opt-in of §3.3;
 * a cluster whose RBAC withholds namespaces still gets ready, its audit
 * just cannot see that opt-in). The workloadRef kinds' rows come from the
 * kind table (sources_init). */
static struct {
    const char *resource, *prefix, *plural;
    bool metadata_only;
    const struct k8s_json_filter *filter;
    bool cluster_scoped, optional;
    k8s_map_fn map;
    bool relisted;
    k8s_store_transform_fn transform; /* what the cache keeps of an object */
} sources[N_SRC] = {
    [SRC_CONNS] = {"mldiagnosticsconnections.diagon.gke.io", "/apis/" OP_GROUP_VERSION, OP_PLURAL,
                   false, conn_keep, .map = op_map_connection, .relisted = true,
                   .transform = op_capture_trim},
    [SRC_PODS] = {"pods", "/api/v1", "pods", false, NULL, /* filter: op_pod_keep() */
                  .transform = op_pod_pack},
    [SRC_NAMESPACES] = {"namespaces", "/api/v1", "namespaces", true, ns_keep, true, true},
};
static pthread_once_t sources_once = PTHREAD_ONCE_INIT;

/* The rows the kind table gives: the pod filter, one per workloadRef kind. */
static void sources_init(void)
{
    sources[SRC_PODS].filter = op_pod_keep();
    for (int k = 0; k < K8S_KIND_REF_COUNT; k++) {
        const struct k8s_kind *d = &k8s_kinds[k];
        wl_status[k][0] = (struct k8s_json_filter){d->pods_by_status, NULL};
        wl_keep[k][0] = (struct k8s_json_filter){"metadata", wl_meta};
        wl_keep[k][1] = (struct k8s_json_filter){d->pods_by_status ? "status" : NULL, wl_status[k]};
        sources[SRC_WORKLOAD + k].resource = d->resource;
        sources[SRC_WORKLOAD + k].prefix = d->prefix;
        sources[SRC_WORKLOAD + k].plural = d->plural;
        sources[SRC_WORKLOAD + k].metadata_only = !d->pods_by_status; /* else: status too */
        sources[SRC_WORKLOAD + k].filter = wl_keep[k];
    }
}

struct source {
    struct op_controller *ctl;
    enum src_kind kind;
    bool failed_once; /* an optional source's failure was logged */
    char path[512];
    struct k8s_store *store;
    struct k8s_watch *watch;
};

struct op_controller {
    const struct op_config *cfg;
    struct k8s_client *client;
    struct k8s_metrics *metrics;
    struct source src[N_SRC];
    struct k8s_queue *queue;
    struct op_relay *relay;
    struct op_api_io io; /* what the capture reconciler reaches */
    struct op_capture *capture;
    struct op_audit *audit;
    struct k8s_manager mgr; /* the workers running the capture reconciler */
    struct k8s_ticker *audit_ticker, *resync_ticker; /* resync: NULL when its period is 0 */
};

/* ---------- caches → queue ---------- */

static void stores_now(void *ud, struct op_stores *out)
{
    struct op_controller *c = ud;
    *out = (struct op_stores){
        .pods = c->src[SRC_PODS].store,
        .namespaces =
            k8s_watch_synced(c->src[SRC_NAMESPACES].watch) ? c->src[SRC_NAMESPACES].store : NULL,
    };
    for (int k = 0; k < K8S_KIND_REF_COUNT; k++) {
        out->kinds[k] = c->src[SRC_WORKLOAD + k].store;
        out->absent[k] = k8s_watch_absent(c->src[SRC_WORKLOAD + k].watch);
    }
}

static struct k8s_map_ctx map_ctx(const struct op_controller *c)
{
    return (struct k8s_map_ctx){c->queue, c->src[SRC_CONNS].store};
}

static void on_changed(void *ud, enum k8s_watch_event_type ev, const json_t *obj)
{
    (void)ev;
    struct source *src = ud;
    struct k8s_map_ctx ctx = map_ctx(src->ctl);
    (sources[src->kind].map ? sources[src->kind].map : op_map_namespace)(&ctx, obj);
}

static void on_relisted(void *ud, enum k8s_watch_event_type ev, const char *key, const json_t *obj)
{
    struct source *src = ud;
    struct k8s_map_ctx ctx = map_ctx(src->ctl);
    op_map_relisted(&ctx, key, ev == K8S_EV_DELETED ? NULL : obj);
}

/* A (re)list done: every unfinished capture may find what it waits for. */
static void on_listed(void *ud)
{
    struct source *src = ud;
    if (sources[src->kind].optional)
        return; /* nothing of a capture depends on it */
    struct k8s_map_ctx ctx = map_ctx(src->ctl);
    op_map_unfinished(&ctx, NULL);
}

static void on_state(void *ud, enum k8s_watch_state st, const struct k8s_error *err)
{
    struct source *src = ud;
    const char *res = sources[src->kind].resource;
    switch (st) {
    case K8S_WATCH_SYNCED:
        k8s_log_json(K8S_LOG_INFO, "cache synced",
                     json_pack("{s:s, s:I}", "resource", res, "objects",
                               (json_int_t)k8s_store_size(src->store)));
        break;
    case K8S_WATCH_ABSENT:
        k8s_log_json(K8S_LOG_WARN, "resource not served (CRD not installed?); retrying later",
                     json_pack("{s:s}", "resource", res));
        break;
    case K8S_WATCH_FAILED:
        if (sources[src->kind].optional && src->failed_once)
            break; /* said once: what the audit cannot see until it can be read */
        src->failed_once = sources[src->kind].optional;
        k8s_log_json(K8S_LOG_WARN,
                     sources[src->kind].optional
                         ? "cannot read namespaces; retrying (the audit skips namespace-label "
                           "opt-ins until then)"
                         : "watch failed; retrying",
                     json_pack("{s:s, s:s}", "resource", res, "error", err ? err->message : ""));
        break;
    case K8S_WATCH_RELISTING:
        k8s_log_json(K8S_LOG_INFO, "resourceVersion expired; listing again",
                     json_pack("{s:s}", "resource", res));
        break;
    }
}

/* ---------- workers ---------- */

static enum k8s_result reconcile_capture(void *ud, const char *key, int64_t *after,
                                         struct k8s_error *err)
{
    return op_capture_reconcile(ud, key, after, err);
}

/* A failed reconcile, logged once here at the edge before its retry. */
static void capture_failed(void *ud, const char *key, const struct k8s_error *err, int failures)
{
    (void)ud;
    k8s_log_json(
        K8S_LOG_WARN, "reconcile failed; retrying",
        json_pack("{s:s, s:s, s:i}", "resource", key, "error", err->message, "failures", failures));
}

/* The audit's rescan, once the caches have synced; with Events when
 * this replica leads. */
static void audit_job(void *ud, bool leading)
{
    struct op_controller *c = ud;
    if (op_controller_synced(c, NULL, 0))
        op_audit_scan(c->audit, leading);
}

/* The safety net under the watches (client-go's resync): every period,
 * the leader queues every unfinished capture again. */
static void resync_job(void *ud, bool leading)
{
    struct op_controller *c = ud;
    if (!leading)
        return;
    struct k8s_map_ctx ctx = map_ctx(c);
    op_map_unfinished(&ctx, NULL);
    k8s_log_json(K8S_LOG_DEBUG, "resync: unfinished captures queued again",
                 json_pack("{s:I}", "queued", (json_int_t)k8s_queue_len(c->queue)));
}

static void tickers_lead(struct op_controller *c, bool leading)
{
    if (c->audit_ticker)
        k8s_ticker_lead(c->audit_ticker, leading);
    if (c->resync_ticker)
        k8s_ticker_lead(c->resync_ticker, leading);
}

static int start_tickers(struct op_controller *c, struct k8s_error *err)
{
    struct k8s_ticker_job audit = {audit_job, c, c->cfg->audit_interval_ns, .at_once = true};
    struct k8s_ticker_job resync = {resync_job, c, c->cfg->resync_period_ns};
    if (k8s_ticker_start(&audit, &c->audit_ticker) < 0)
        return k8s_error_set(err, -K8S_EIO, "cannot start the audit thread");
    if (resync.period_ns > 0 && k8s_ticker_start(&resync, &c->resync_ticker) < 0)
        return k8s_error_set(err, -K8S_EIO, "cannot start the resync thread");
    return 0;
}

/* ---------- metrics ---------- */

static double depth(void *ud)
{
    return (double)k8s_queue_len(ud);
}

static double restarts(void *ud)
{
    return (double)k8s_watch_restarts(((struct source *)ud)->watch);
}

static double objects(void *ud)
{
    return (double)k8s_store_size(((struct source *)ud)->store);
}

static void register_metrics(struct op_controller *c)
{
    struct k8s_metrics *m = c->metrics;
    if (!m)
        return;
    k8s_metrics_gauge_fn(m, "mldiagnostics_operator_workqueue_depth",
                         "Resource keys waiting for a worker.", NULL, depth, c->queue);
    for (int i = 0; i < N_SRC; i++) {
        char labels[128];
        snprintf(labels, sizeof(labels), "resource=\"%s\"", sources[i].resource);
        k8s_metrics_counter_fn(m, "mldiagnostics_operator_watch_restarts_total",
                               "Watches (re)started per resource.", labels, restarts, &c->src[i]);
        k8s_metrics_gauge_fn(m, "mldiagnostics_operator_cache_objects", "Objects in each cache.",
                             labels, objects, &c->src[i]);
    }
}

/* ---------- lifecycle ---------- */

static int start_source(struct op_controller *c, enum src_kind k, struct k8s_error *err)
{
    struct source *s = &c->src[k];
    s->ctl = c;
    s->kind = k;
    const char *ns = sources[k].cluster_scoped ? "" : c->cfg->namespace;
    if (*ns)
        snprintf(s->path, sizeof(s->path), "%s/namespaces/%s/%s", sources[k].prefix, ns,
                 sources[k].plural);
    else
        snprintf(s->path, sizeof(s->path), "%s/%s", sources[k].prefix, sources[k].plural);
    if (!(s->store = k8s_store_new()))
        return k8s_error_set(err, -K8S_ENOMEM, "out of memory");
    if (sources[k].transform) /* pods: ~200 bytes each (op_pod) */
        k8s_store_set_transform(s->store, sources[k].transform);
    struct k8s_watch_spec spec = {.resource = sources[k].resource,
                                  .path = s->path,
                                  .metadata_only = sources[k].metadata_only,
                                  .filter = sources[k].filter};
    struct k8s_watch_hooks hooks = {.state = on_state,
                                    .changed = on_changed,
                                    .listed = on_listed,
                                    .relisted = sources[k].relisted ? on_relisted : NULL,
                                    .ud = s};
    int r = k8s_watch_start(c->client, &spec, s->store, &hooks, &s->watch);
    return r < 0 ? k8s_error_set(err, r, "cannot watch %s", sources[k].resource) : 0;
}

int op_controller_start(const struct op_config *cfg, struct k8s_client *client,
                        struct k8s_metrics *metrics, struct op_controller **ret,
                        struct k8s_error *reterr)
{
    pthread_once(&sources_once, sources_init);
    struct op_controller *c = calloc(1, sizeof(*c));
    if (!c)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    c->cfg = cfg;
    c->client = client;
    c->metrics = metrics;
    /* a reconcile that keeps failing (the API server away) waits at most as
     * long as a watch does: it goes on soon after the server is back */
    struct k8s_queue_opts qo = {.max_delay_ns = QUEUE_MAX_DELAY};
    int r =
        (c->queue = k8s_queue_new(&qo)) ? 0 : k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    r = r ? r : op_relay_new(&c->relay, reterr);
    for (int k = 0; r == 0 && k < N_SRC; k++)
        r = start_source(c, (enum src_kind)k, reterr);
    if (r == 0) {
        c->io = (struct op_api_io){client, c->relay, cfg->identity};
        struct op_capture_deps d = {.api = op_api_live(&c->io),
                                    .conns = c->src[SRC_CONNS].store,
                                    .stores = stores_now,
                                    .stores_ud = c,
                                    .queue = c->queue,
                                    .cfg = cfg,
                                    .metrics = metrics};
        r = op_capture_new(&d, &c->capture);
    }
    if (r == 0 && !(c->audit = op_audit_new(client, stores_now, c, metrics, cfg->identity)))
        r = k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    r = r ? r : start_tickers(c, reterr);
    if (r < 0) {
        op_controller_free(c);
        return r;
    }
    register_metrics(c);
    *ret = c;
    return 0;
}

bool op_controller_synced(void *ctl, char *why, size_t cap)
{
    struct op_controller *c = ctl;
    for (int k = 0; k < N_SRC; k++)
        if (!sources[k].optional && !k8s_watch_synced(c->src[k].watch)) {
            if (why)
                snprintf(why, cap, "waiting for the %s cache", sources[k].resource);
            return false;
        }
    return true;
}

void op_controller_lead(struct op_controller *c)
{
    if (c->mgr.n || !op_controller_synced(c, NULL, 0))
        return;
    tickers_lead(c, true);        /* the audit runs now, with Events */
    op_capture_adopt(c->capture); /* who holds which pod, before anything is dispatched */
    struct k8s_map_ctx ctx = map_ctx(c);
    op_map_unfinished(&ctx, NULL);
    struct k8s_reconciler rec = {reconcile_capture, capture_failed, c->capture};
    int n = k8s_manager_start(&c->mgr, c->queue, &rec, (int)c->cfg->workers);
    k8s_log_json(K8S_LOG_INFO, "reconciling", json_pack("{s:i}", "workers", n));
}

static void stop_workers(struct op_controller *c)
{
    k8s_queue_shutdown(c->queue);
    k8s_manager_stop(&c->mgr);
    tickers_lead(c, false);
}

void op_controller_shutdown(struct op_controller *c, int64_t grace_ns)
{
    stop_workers(c);
    op_capture_shutdown(c->capture, grace_ns);
}

void op_controller_abandon(struct op_controller *c)
{
    stop_workers(c);
    op_capture_abandon(c->capture);
}

void op_controller_free(struct op_controller *c)
{
    if (!c)
        return;
    if (c->queue)
        stop_workers(c);
    k8s_ticker_free(c->audit_ticker);
    k8s_ticker_free(c->resync_ticker);
    for (int k = 0; k < N_SRC; k++)
        k8s_watch_free(c->src[k].watch);
    op_relay_free(c->relay); /* cancels what is left: callbacks reach the capture */
    op_capture_free(c->capture);
    op_audit_free(c->audit);
    for (int k = 0; k < N_SRC; k++)
        k8s_store_free(c->src[k].store);
    k8s_queue_free(c->queue);
    free(c);
}
