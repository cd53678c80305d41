#include "op_runs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"
#include "op_holds.h"

#define SEC K8S_NSEC_PER_SEC

/* What this process knows about one resource beyond its status. */
struct run {
    char *key, *uid;
    uint64_t batch;
    bool live;        /* RPCs in flight */
    bool finished;    /* results below wait to be written */
    bool interrupted; /* cancelled by shutdown: record as interrupted */
    bool discard;     /* the resource is gone: drop the results */
    struct op_host_result *results;
    char **pods; /* held "ns/pod" (op_holds), and the hosts' file names */
    char **files;
    size_t n;
    size_t of; /* the workload's pods they were chosen from (0: not a choice) */
    int attempt;
    int64_t expected_end_mono; /* when the profilers should be done */
    char written_rv[64];       /* resourceVersion of our last status write */
    char session[20];
    char *location; /* <storage>/plugins/profile/<session>; NULL until claimed (a record
                     * per resource written: 5,000 inline 1.1 KiB buffers were 6 MiB) */
    struct run *next;
};

struct op_runs {
    struct op_api api;
    struct k8s_queue *queue;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* a batch finished */
    struct run *runs;
    struct op_holds *holds; /* pod -> the run holding it */
    bool stopping;
};

/* ---------- records (lock held) ---------- */

static struct run *run_find(struct op_runs *rs, const char *key)
{
    for (struct run *r = rs->runs; r; r = r->next)
        if (!strcmp(r->key, key))
            return r;
    return NULL;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* Free the pod and result arrays; the holds stay as they are. */
static void run_clear(struct run *r)
{
    free_list(r->pods, r->n);
    free_list(r->files, r->files ? r->n : 0);
    free(r->results);
    r->pods = r->files = NULL;
    r->results = NULL;
    r->n = 0;
    r->finished = r->interrupted = false;
}

/* Done with the pods: clear, and give them up for other captures. */
static void run_release(struct op_runs *rs, struct run *r)
{
    run_clear(r);
    op_holds_release(rs->holds, r);
}

static void run_drop(struct op_runs *rs, struct run *r)
{
    for (struct run **p = &rs->runs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    run_release(rs, r);
    free(r->key);
    free(r->uid);
    free(r->location);
    free(r);
}

static struct run *run_new(struct op_runs *rs, const char *key, const char *uid)
{
    struct run *r = calloc(1, sizeof(*r));
    if (!r || !(r->key = strdup(key)) || !(r->uid = strdup(uid ? uid : ""))) {
        if (r)
            free(r->key);
        free(r);
        return NULL;
    }
    r->next = rs->runs;
    rs->runs = r;
    return r;
}

static struct run *run_get(struct op_runs *rs, const char *key, const char *uid)
{
    struct run *r = run_find(rs, key);
    return r ? r : run_new(rs, key, uid);
}

/* ---------- the set ---------- */

struct op_runs *op_runs_new(const struct op_api *api, struct k8s_queue *queue)
{
    struct op_runs *rs = calloc(1, sizeof(*rs));
    if (!rs || !(rs->holds = op_holds_new())) {
        free(rs);
        return NULL;
    }
    rs->api = *api;
    rs->queue = queue;
    pthread_mutex_init(&rs->lock, NULL);
    k8s_cond_init_mono(&rs->cond);
    return rs;
}

void op_runs_free(struct op_runs *rs)
{
    if (!rs)
        return;
    while (rs->runs)
        run_drop(rs, rs->runs);
    op_holds_free(rs->holds);
    pthread_cond_destroy(&rs->cond);
    pthread_mutex_destroy(&rs->lock);
    free(rs);
}

/* A worker reconciles a key alone, and the relay touches a run only while
 * live, so the arrays stay put while the plan reads them. */
struct op_run_view op_runs_view(struct op_runs *rs, const char *key, bool *ret_stopping)
{
    struct op_run_view v = {0};
    pthread_mutex_lock(&rs->lock);
    *ret_stopping = rs->stopping;
    const struct run *r = run_find(rs, key);
    if (r) {
        enum op_run_state st = r->live          ? OP_RUN_LIVE
                               : !r->finished   ? OP_RUN_NONE
                               : r->interrupted ? OP_RUN_INTERRUPTED
                                                : OP_RUN_FINISHED;
        v = (struct op_run_view){st,         r->uid,     r->results,
                                 r->pods,    r->files,   r->n,
                                 r->attempt, r->session, r->location ? r->location : "",
                                 r->of};
    }
    pthread_mutex_unlock(&rs->lock);
    return v;
}

void op_runs_wrote(struct op_runs *rs, const char *key, const char *uid, const char *rv)
{
    pthread_mutex_lock(&rs->lock);
    struct run *r = run_get(rs, key, uid);
    if (r && rv)
        snprintf(r->written_rv, sizeof(r->written_rv), "%s", rv);
    pthread_mutex_unlock(&rs->lock);
}

bool op_runs_stale(struct op_runs *rs, const char *key, const char *rv)
{
    pthread_mutex_lock(&rs->lock);
    const struct run *r = run_find(rs, key);
    bool stale = r && r->written_rv[0] && (!rv || strcmp(rv, r->written_rv));
    pthread_mutex_unlock(&rs->lock);
    return stale;
}

/* The check and the taking are one step in op_holds, so of two workers
 * deciding at once one wins. */
int op_runs_claim(struct op_runs *rs, const char *key, const char *uid, struct op_plan_dispatch *d,
                  char *busy, size_t cap)
{
    pthread_mutex_lock(&rs->lock);
    struct run *run = run_get(rs, key, uid);
    pthread_mutex_unlock(&rs->lock);
    if (!run)
        return -K8S_ENOMEM;
    struct k8s_error e = {0};
    if (op_holds_claim(rs->holds, run, run->key, d->pods, d->n, &e) < 0) {
        snprintf(busy, cap, "%s", e.message);
        return 1;
    }
    pthread_mutex_lock(&rs->lock);
    run_clear(run); /* what it held before is now the plan's pods */
    run->pods = d->pods;
    run->files = d->files;
    run->n = d->n;
    run->of = d->of;
    d->pods = d->files = NULL;
    d->n = 0;
    snprintf(run->session, sizeof(run->session), "%s", d->session);
    free(run->location);
    run->location = strdup(d->location); /* NULL without memory: the view says "" */
    pthread_mutex_unlock(&rs->lock);
    return 0;
}

static void unclaim(struct op_runs *rs, struct run *r, bool resumed)
{
    if (!r)
        return;
    if (resumed) /* still Running in status: it keeps its pods */
        run_clear(r);
    else
        run_release(rs, r);
}

void op_runs_unclaim(struct op_runs *rs, const char *key, bool resumed)
{
    pthread_mutex_lock(&rs->lock);
    unclaim(rs, run_find(rs, key), resumed);
    pthread_mutex_unlock(&rs->lock);
}

static void on_batch_done(void *ud, uint64_t id, const struct op_host_result *results, size_t n)
{
    struct op_runs *rs = ud;
    char *requeue = NULL;
    pthread_mutex_lock(&rs->lock);
    struct run *r = rs->runs;
    while (r && !(r->live && r->batch == id))
        r = r->next;
    if (r) {
        r->live = false;
        if (r->discard) {
            run_drop(rs, r);
        } else if ((r->results = malloc(n * sizeof(*results)))) {
            memcpy(r->results, results, n * sizeof(*results));
            r->finished = true;
            requeue = strdup(r->key);
        }
    }
    bool stopping = rs->stopping; /* read under the lock: shutdown writes it */
    pthread_cond_broadcast(&rs->cond);
    pthread_mutex_unlock(&rs->lock);
    if (requeue && !stopping)
        k8s_queue_add(rs->queue, requeue);
    free(requeue);
}

int op_runs_submit(struct op_runs *rs, const char *key, const struct op_plan_dispatch *d)
{
    pthread_mutex_lock(&rs->lock);
    struct run *run = run_find(rs, key);
    int r =
        run ? rs->api.submit(rs->api.ud, &d->batch, on_batch_done, rs, &run->batch) : -K8S_ENOMEM;
    if (r == 0) {
        run->live = true;
        run->attempt = d->attempt;
        run->expected_end_mono = k8s_mono_ns() + d->expected_ns;
    } else {
        unclaim(rs, run, d->resumed);
    }
    pthread_mutex_unlock(&rs->lock);
    return r;
}

void op_runs_forget(struct op_runs *rs, const char *key, const char *reason)
{
    pthread_mutex_lock(&rs->lock);
    struct run *r = run_find(rs, key);
    if (r && r->live) {
        r->discard = true;
        rs->api.cancel(rs->api.ud, r->batch, reason);
        /* the relay's callback drops it; a re-created resource gets a new run */
        r->key[0] = '\0';
    } else if (r) {
        run_drop(rs, r);
    }
    pthread_mutex_unlock(&rs->lock);
}

void op_runs_drop(struct op_runs *rs, const char *key)
{
    pthread_mutex_lock(&rs->lock);
    struct run *r = run_find(rs, key);
    if (r)
        run_drop(rs, r);
    pthread_mutex_unlock(&rs->lock);
}

void op_runs_release(struct op_runs *rs, const char *key)
{
    pthread_mutex_lock(&rs->lock);
    struct run *r = run_find(rs, key);
    if (r) /* keep written_rv: a stale cache is read through */
        run_release(rs, r);
    pthread_mutex_unlock(&rs->lock);
}

void op_runs_each_result(struct op_runs *rs, const char *key,
                         void (*fn)(void *ud, const struct op_host_result *h), void *ud)
{
    pthread_mutex_lock(&rs->lock);
    const struct run *r = run_find(rs, key);
    for (size_t i = 0; r && i < r->n && r->results; i++)
        fn(ud, &r->results[i]);
    pthread_mutex_unlock(&rs->lock);
}

void op_runs_adopt(struct op_runs *rs, const char *key, const char *uid, char **pods, size_t n)
{
    pthread_mutex_lock(&rs->lock);
    struct run *r = run_get(rs, key, uid);
    if (r && !r->live && !r->finished && !r->n &&
        op_holds_claim(rs->holds, r, key, pods, n, NULL) == 0) {
        r->pods = pods; /* files: the re-dispatch's claim sets them */
        r->n = n;
        pods = NULL;
    }
    pthread_mutex_unlock(&rs->lock);
    free_list(pods, n);
}

size_t op_runs_live(struct op_runs *rs)
{
    size_t n = 0;
    pthread_mutex_lock(&rs->lock);
    for (struct run *r = rs->runs; r; r = r->next)
        n += r->live;
    pthread_mutex_unlock(&rs->lock);
    return n;
}

/* ---------- stopping (lock held) ---------- */

/* Wait until no run is live or until the monotonic deadline. */
static void wait_live(struct op_runs *rs, int64_t until)
{
    struct timespec ts = {until / SEC, until % SEC};
    for (;;) {
        bool any = false;
        for (struct run *r = rs->runs; r; r = r->next)
            any |= r->live;
        if (!any || k8s_mono_ns() >= until)
            return;
        pthread_cond_timedwait(&rs->cond, &rs->lock, &ts);
    }
}

/* Cancel the live runs that would still run at `until` (INT64_MAX: every
 * live run), marking them interrupted or discarded. */
static void cancel_live(struct op_runs *rs, int64_t until, bool discard, const char *reason)
{
    for (struct run *r = rs->runs; r; r = r->next)
        if (r->live && (until == INT64_MAX || r->expected_end_mono > until)) {
            if (discard)
                r->discard = true;
            else
                r->interrupted = true;
            rs->api.cancel(rs->api.ud, r->batch, reason);
        }
}

void op_runs_shutdown(struct op_runs *rs, int64_t grace_ns, const char *reason)
{
    int64_t until = k8s_mono_ns() + grace_ns;
    pthread_mutex_lock(&rs->lock);
    rs->stopping = true;
    cancel_live(rs, until, false, reason); /* cannot end in time: stop it now */
    wait_live(rs, until);
    cancel_live(rs, INT64_MAX, false, reason);
    wait_live(rs, k8s_mono_ns() + SEC);
    pthread_mutex_unlock(&rs->lock);
}

void op_runs_abandon(struct op_runs *rs, const char *reason)
{
    pthread_mutex_lock(&rs->lock);
    rs->stopping = true;
    cancel_live(rs, INT64_MAX, true, reason);
    wait_live(rs, k8s_mono_ns() + SEC);
    pthread_mutex_unlock(&rs->lock);
}

char *op_runs_next_finished(struct op_runs *rs)
{
    char *key = NULL;
    pthread_mutex_lock(&rs->lock);
    for (struct run *r = rs->runs; r && !key; r = r->next)
        if (r->finished && r->key[0])
            key = strdup(r->key);
    pthread_mutex_unlock(&rs->lock);
    return key;
}

void op_runs_drop_finished(struct op_runs *rs, const char *key)
{
    pthread_mutex_lock(&rs->lock);
    struct run *r = run_find(rs, key);
    if (r && r->finished) /* could not write it: give up on this one */
        run_drop(rs, r);
    pthread_mutex_unlock(&rs->lock);
}
