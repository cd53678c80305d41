#include "op_lease.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jget.h"
#include "k8s_time.h"

#define SEC K8S_NSEC_PER_SEC

struct op_lease {
    struct k8s_client *c;
    char *ns, *name, *identity;
    char path[512], collection[400];
    int64_t lease_ns, renew_deadline_ns, retry_ns;
    op_lease_fn fn;
    void *ud;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    bool leading;       /* atomic reads */
    int64_t last_renew; /* monotonic ns of the last successful write */
    json_t *held;       /* the Lease as last written by us (owned) */
    struct op_lease_observed obs;
};

bool op_lease_may_acquire(const json_t *spec, const char *me, struct op_lease_observed *obs,
                          int64_t now_ns)
{
    if (!obs->spec || !json_equal(obs->spec, spec)) {
        json_decref(obs->spec);
        obs->spec = json_deep_copy(spec);
        obs->seen_ns = now_ns;
    }
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    if (!holder || !*holder || !strcmp(holder, me))
        return true;
    json_int_t secs = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    if (secs <= 0)
        secs = 15;
    return now_ns >= obs->seen_ns + secs * SEC;
}

/* The spec we write: ourselves as holder. */
static json_t *our_spec(struct op_lease *l, const json_t *old, bool release)
{
    char now[28];
    k8s_time_rfc3339_micro(k8s_real_ns(), now);
    const char *holder = json_string_value(json_object_get(old, "holderIdentity"));
    bool ours = holder && !strcmp(holder, l->identity);
    json_int_t transitions = json_integer_value(json_object_get(old, "leaseTransitions"));
    const json_t *acquired = json_object_get(old, "acquireTime");
    if (!ours && old)
        transitions++;
    return json_pack(
        "{s:s, s:I, s:s, s:s, s:I}", "holderIdentity", release ? "" : l->identity,
        "leaseDurationSeconds", (json_int_t)(release ? 1 : l->lease_ns / SEC), "acquireTime",
        ours && json_is_string(acquired) && !release ? json_string_value(acquired) : now,
        "renewTime", now, "leaseTransitions", transitions);
}

static int create_lease(struct op_lease *l, json_t **ret, struct k8s_error *err)
{
    json_t *spec = our_spec(l, NULL, false);
    json_t *obj =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
                  "Lease", "metadata", "name", l->name, "namespace", l->ns, "spec", spec);
    int r = obj ? k8s_send_json(l->c, "POST", l->collection, NULL, obj, 5000, ret, err)
                : k8s_error_set(err, -K8S_ENOMEM, "out of memory");
    json_decref(obj);
    return r;
}

/* One round of client-go's tryAcquireOrRenew: 0 when we hold the Lease
 * afterwards, 1 when someone else does, negative on errors. */
static int try_acquire_or_renew(struct op_lease *l, struct k8s_error *err)
{
    json_t *cur = NULL, *done = NULL;
    int r = k8s_get_json(l->c, l->path, NULL, 5000, &cur, err);
    if (r == -K8S_ENOTFOUND) {
        r = create_lease(l, &done, err);
        goto out_store;
    }
    if (r < 0)
        return r;
    json_t *spec = json_object_get(cur, "spec");
    if (!op_lease_may_acquire(spec, l->identity, &l->obs, k8s_mono_ns())) {
        json_decref(cur);
        return 1;
    }
    json_object_set_new(cur, "spec", our_spec(l, spec, false));
    r = k8s_send_json(l->c, "PUT", l->path, NULL, cur, 5000, &done, err);
    json_decref(cur);
out_store:
    if (r < 0)
        return r == -K8S_ECONFLICT ? 1 : r; /* another candidate wrote first */
    json_decref(l->held);
    l->held = done;
    l->last_renew = k8s_mono_ns();
    return 0;
}

static void release(struct op_lease *l)
{
    struct k8s_error err;
    json_t *cur = NULL;
    if (k8s_get_json(l->c, l->path, NULL, 5000, &cur, &err) < 0)
        return;
    const char *holder = k8s_jstr2(cur, "spec", "holderIdentity");
    if (holder && !strcmp(holder, l->identity)) {
        json_object_set_new(cur, "spec", our_spec(l, json_object_get(cur, "spec"), true));
        if (k8s_send_json(l->c, "PUT", l->path, NULL, cur, 5000, NULL, &err) < 0) {
            /* the next candidate waits out the lease instead */
        }
    }
    json_decref(cur);
}

static void set_leading(struct op_lease *l, bool on, const struct k8s_error *err)
{
    if (__atomic_load_n(&l->leading, __ATOMIC_ACQUIRE) == on)
        return;
    __atomic_store_n(&l->leading, on, __ATOMIC_RELEASE);
    l->fn(l->ud, on, err);
}

/* Sleep up to ns; false when asked to stop. */
static bool pause_for(struct op_lease *l, int64_t ns)
{
    int64_t until = k8s_mono_ns() + ns;
    struct timespec ts = {until / SEC, until % SEC};
    pthread_mutex_lock(&l->lock);
    while (!l->stop && k8s_mono_ns() < until)
        pthread_cond_timedwait(&l->cond, &l->lock, &ts);
    bool go = !l->stop;
    pthread_mutex_unlock(&l->lock);
    return go;
}

static void *run(void *arg)
{
    struct op_lease *l = arg;
    do {
        struct k8s_error err = {0};
        int r = try_acquire_or_renew(l, &err);
        if (r == 0) {
            set_leading(l, true, NULL);
        } else if (op_lease_leading(l) && k8s_mono_ns() - l->last_renew >= l->renew_deadline_ns) {
            if (r > 0)
                k8s_error_set(&err, -K8S_ECONFLICT, "the Lease %s/%s was taken over", l->ns,
                              l->name);
            k8s_error_prefix(&err, "failed to renew the Lease within %llds",
                             (long long)(l->renew_deadline_ns / SEC));
            set_leading(l, false, &err);
        }
    } while (pause_for(l, l->retry_ns));
    if (op_lease_leading(l))
        release(l);
    return NULL;
}

int op_lease_start(struct k8s_client *c, const struct op_lease_opts *o, op_lease_fn fn, void *ud,
                   struct op_lease **ret)
{
    struct op_lease *l = calloc(1, sizeof(*l));
    if (!l)
        return -K8S_ENOMEM;
    l->c = c;
    l->fn = fn;
    l->ud = ud;
    l->lease_ns = o->lease_ns ? o->lease_ns : 15 * SEC;
    l->renew_deadline_ns = o->renew_deadline_ns ? o->renew_deadline_ns : 10 * SEC;
    l->retry_ns = o->retry_ns ? o->retry_ns : 2 * SEC;
    l->ns = strdup(o->namespace);
    l->name = strdup(o->name);
    l->identity = strdup(o->identity);
    snprintf(l->collection, sizeof(l->collection),
             "/apis/coordination.k8s.io/v1/namespaces/%s/leases", o->namespace);
    snprintf(l->path, sizeof(l->path), "%s/%s", l->collection, o->name);
    pthread_mutex_init(&l->lock, NULL);
    k8s_cond_init_mono(&l->cond);
    if (!l->ns || !l->name || !l->identity || pthread_create(&l->thread, NULL, run, l) != 0) {
        free(l->ns);
        free(l->name);
        free(l->identity);
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->lock);
        free(l);
        return -K8S_ENOMEM;
    }
    *ret = l;
    return 0;
}

bool op_lease_leading(const struct op_lease *l)
{
    return l && __atomic_load_n(&l->leading, __ATOMIC_ACQUIRE);
}

void op_lease_free(struct op_lease *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->stop = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    json_decref(l->held);
    json_decref(l->obs.spec);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    free(l->ns);
    free(l->name);
    free(l->identity);
    free(l);
}
