#include "op_parent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jget.h"
#include "k8s_log.h"
#include "k8s_time.h"
#include "op_capture.h"
#include "op_plan.h"
#include "op_schedule.h"
#include "op_spec.h"
#include "op_status.h"

#define MAX_CHILDREN 4096

bool op_parent_is(const json_t *obj)
{
    const json_t *s = json_object_get(json_object_get(obj, "spec"), "schedule");
    return s && !json_is_null(s);
}

bool op_parent_revived(const json_t *obj)
{
    const char *phase = k8s_jstr2(obj, "status", "phase");
    const json_t *gen = json_object_get(json_object_get(obj, "metadata"), "generation");
    const json_t *seen = json_object_get(json_object_get(obj, "status"), "observedGeneration");
    return phase && !strcmp(phase, "Failed") && json_is_integer(gen) && json_is_integer(seen) &&
           json_integer_value(gen) != json_integer_value(seen);
}

/* The parent's children in the cache: names and phases, copied. */
struct kids {
    const char *uid;
    struct op_child v[MAX_CHILDREN];
    size_t n;
};

static bool owned_by(const json_t *obj, const char *uid)
{
    const char *u = k8s_jstr(k8s_controller_ref(obj), "uid");
    return u && !strcmp(u, uid);
}

static void collect(void *ud, const char *key, const json_t *stored)
{
    (void)key;
    struct kids *k = ud;
    if (k->n == MAX_CHILDREN || !owned_by(stored, k->uid))
        return;
    const char *name = k8s_jstr2(stored, "metadata", "name");
    const char *phase = k8s_jstr2(stored, "status", "phase");
    char *n = name ? strdup(name) : NULL, *p = strdup(phase ? phase : "");
    if (n && p)
        k->v[k->n++] = (struct op_child){n, p};
    else
        free(n), free(p);
}

static void kids_done(struct kids *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free((char *)k->v[i].name);
        free((char *)k->v[i].phase);
    }
}

/* An invalid schedule or template: Failed, with the message. */
static enum k8s_result invalid(const struct op_parent_deps *d, const json_t *obj, const char *why,
                               struct k8s_error *err)
{
    char when[21];
    k8s_time_rfc3339((time_t)d->now_s, when);
    json_t *gen = json_object_get(json_object_get(obj, "metadata"), "generation");
    json_t *st = json_pack("{s:s, s:s, s:s, s:O?}", "phase", "Failed", "message", why,
                           "completionTime", when, "observedGeneration", gen);
    json_t *done = NULL;
    int r = st ? d->api->put_status(d->api->ud, obj, st, &done, err) : -K8S_ENOMEM;
    json_decref(done);
    if (r < 0)
        return K8S_RETRY;
    struct k8s_error e;
    (void)d->api->event(d->api->ud, obj, "Warning", "InvalidSpec", why, &e);
    return K8S_DONE;
}

/* Create, delete and write what the plan says. */
static int apply(const struct op_parent_deps *d, const json_t *obj, struct op_schedule_plan *p,
                 struct k8s_error *err)
{
    const char *ns = k8s_jstr2(obj, "metadata", "namespace");
    int r = 0;
    if (p->create && (r = d->api->create(d->api->ud, p->create, err)) == -K8S_ECONFLICT)
        r = 0; /* made already: our record of it was lost */
    if (r == 0 && p->create) {
        char msg[400];
        struct k8s_error e;
        snprintf(msg, sizeof(msg), "created capture %s", k8s_jstr2(p->create, "metadata", "name"));
        (void)d->api->event(d->api->ud, obj, "Normal", "Scheduled", msg, &e);
    }
    for (size_t i = 0; r == 0 && i < p->n_remove; i++)
        if ((r = d->api->remove(d->api->ud, ns, p->remove[i], err)) == -K8S_ENOTFOUND)
            r = 0;
    if (r == 0 && p->status) {
        json_t *st = p->status, *done = NULL;
        p->status = NULL;
        r = d->api->put_status(d->api->ud, obj, st, &done, err);
        json_decref(done);
    }
    return r;
}

/* The parent as it resumes: its status without the failure. */
static json_t *resumed(const json_t *obj)
{
    json_t *own = json_deep_copy(obj), *st = json_object_get(own, "status");
    static const char *const drop[] = {"phase", "completionTime", "message", "observedGeneration"};
    for (size_t i = 0; st && i < sizeof(drop) / sizeof(drop[0]); i++)
        json_object_del(st, drop[i]);
    return own;
}

/* Ask op_schedule about a valid parent and apply its answer; forced: the
 * status is written even when the plan would leave it (it was Failed). */
static enum k8s_result schedule(const struct op_parent_deps *d, const json_t *obj,
                                const struct op_schedule *s, bool forced, int64_t *after_ns,
                                struct k8s_error *err)
{
    struct kids *k = calloc(1, sizeof(*k));
    if (!k || !(k->uid = k8s_jstr2(obj, "metadata", "uid"))) {
        free(k);
        k8s_error_set(err, -K8S_ENOMEM, "out of memory");
        return K8S_RETRY;
    }
    k8s_store_each(d->conns, collect, k);
    struct op_schedule_in in = {obj, s, k->v, k->n, d->now_s};
    struct op_schedule_plan p = {0};
    int r = op_schedule_decide(&in, &p);
    if (r == 0 && forced && !p.status &&
        !(p.status = json_deep_copy(json_object_get(obj, "status"))))
        r = -K8S_ENOMEM;
    r = r < 0 ? k8s_error_set(err, r, "out of memory") : apply(d, obj, &p, err);
    *after_ns = p.after_s * K8S_NSEC_PER_SEC;
    bool later = r == 0 && p.after_s >= 0;
    op_schedule_done(&p);
    kids_done(k);
    free(k);
    return r < 0 ? K8S_RETRY : later ? K8S_REQUEUE_AFTER : K8S_DONE;
}

enum k8s_result op_parent_reconcile(const struct op_parent_deps *d, const json_t *obj,
                                    int64_t *after_ns, struct k8s_error *err)
{
    struct op_schedule s;
    struct op_spec spec;
    struct k8s_error why = {0};
    const struct op_config *cfg = d->cfg;
    struct op_spec_limits lim = {cfg->max_capture_duration_ns, cfg->allow_cross_namespace,
                                 cfg->sidecar_timeout_ns};
    *after_ns = 0;
    bool revived = op_parent_revived(obj);
    if (op_phase_terminal(k8s_jstr2(obj, "status", "phase")) && !revived)
        return K8S_DONE;
    if (op_schedule_parse(obj, &s, &why) < 0)
        return invalid(d, obj, why.message, err);
    if (op_spec_parse(obj, &lim, &spec, &why) < 0)
        return invalid(d, obj, why.message, err);
    op_spec_done(&spec);
    json_t *own = revived ? resumed(obj) : NULL;
    if (revived && !own) {
        k8s_error_set(err, -K8S_ENOMEM, "out of memory");
        return K8S_RETRY;
    }
    enum k8s_result res = schedule(d, own ? own : obj, &s, revived, after_ns, err);
    json_decref(own);
    return res;
}
