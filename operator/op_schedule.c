#include "op_schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jget.h"
#include "k8s_time.h"

#define F        "spec."
#define GV       "diagon.gke.io/v1alpha1"
#define MAX_NAME 242 /* a parent's name: room for "-" and a unix minute */

/* An optional non-negative integer of spec; def when absent. */
static int count(const json_t *spec, const char *name, int64_t def, int64_t *ret,
                 struct k8s_error *reterr)
{
    const json_t *v = json_object_get(spec, name);
    if (!v || json_is_null(v)) {
        *ret = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000)
        return k8s_error_set(reterr, -K8S_EINVAL, F "%s: must be an integer from 0 to 1000", name);
    *ret = json_integer_value(v);
    return 0;
}

int op_schedule_parse(const json_t *obj, struct op_schedule *ret, struct k8s_error *reterr)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *text = json_object_get(spec, "schedule");
    struct op_schedule s = {0};
    if (!text || json_is_null(text)) {
        *ret = s;
        return 0;
    }
    const char *name = k8s_jstr2(obj, "metadata", "name"), *policy;
    const json_t *susp = json_object_get(spec, "suspend");
    if (!json_is_string(text))
        return k8s_error_set(reterr, -K8S_EINVAL, F "schedule: must be a string");
    int r = op_cron_parse(json_string_value(text), &s.cron, reterr);
    r = r ? r : count(spec, "successfulHistoryLimit", 3, &s.keep_succeeded, reterr);
    r = r ? r : count(spec, "failedHistoryLimit", 1, &s.keep_failed, reterr);
    if (r < 0)
        return r;
    if (susp && !json_is_null(susp) && !json_is_boolean(susp))
        return k8s_error_set(reterr, -K8S_EINVAL, F "suspend: must be true or false");
    policy = json_string_value(json_object_get(spec, "concurrencyPolicy"));
    if (policy && strcmp(policy, "Forbid") && strcmp(policy, "Allow"))
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "concurrencyPolicy: must be Forbid or Allow (got \"%.40s\")",
                             policy);
    if (name && strlen(name) > MAX_NAME)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "metadata.name: a schedule's name has at most %d characters, so "
                             "its children's names fit",
                             MAX_NAME);
    s.set = true;
    s.suspend = json_is_true(susp);
    s.allow = policy && !strcmp(policy, "Allow");
    *ret = s;
    return 0;
}

void op_schedule_child_name(const char *parent, int64_t tick_s, char *out, size_t cap)
{
    snprintf(out, cap, "%s-%lld", parent, (long long)(tick_s / 60));
}

void op_schedule_done(struct op_schedule_plan *p)
{
    json_decref(p->create);
    json_decref(p->status);
    free(p->remove);
    memset(p, 0, sizeof(*p));
}

static bool finished(const struct op_child *c)
{
    return !strcmp(c->phase, "Succeeded") || !strcmp(c->phase, "Failed");
}

/* The tick a child was made for (its name's unix minute), -1 if not ours. */
static int64_t minute_of(const char *parent, const char *child)
{
    size_t n = strlen(parent);
    if (strncmp(child, parent, n) || child[n] != '-')
        return -1;
    char *end;
    long long m = strtoll(child + n + 1, &end, 10);
    return *end || m < 0 ? -1 : (int64_t)m;
}

/* Newest first, by tick (arg: the parent's name). */
static int newest_first(const void *a, const void *b, void *parent)
{
    int64_t x = minute_of(parent, (*(const struct op_child *const *)a)->name);
    int64_t y = minute_of(parent, (*(const struct op_child *const *)b)->name);
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Finished children beyond the history limits, oldest first, into remove. */
static int history(const struct op_schedule_in *in, const char *parent, struct op_schedule_plan *p)
{
    const struct op_child **v = in->n ? calloc(in->n, sizeof(*v)) : NULL;
    p->remove = in->n ? calloc(in->n, sizeof(*p->remove)) : NULL;
    if (in->n && (!v || !p->remove)) {
        free(v);
        return -K8S_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++)
        if (finished(&in->children[i]))
            v[n++] = &in->children[i];
    if (n)
        qsort_r(v, n, sizeof(*v), newest_first, (void *)parent);
    int64_t ok = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        bool succeeded = !strcmp(v[i]->phase, "Succeeded");
        if (succeeded ? ++ok > in->sched->keep_succeeded : ++bad > in->sched->keep_failed)
            p->remove[p->n_remove++] = v[i]->name;
    }
    free(v);
    return 0;
}

/* The child for a tick: the parent's triggerCapture, owned by the parent. */
static json_t *child(const json_t *parent, const char *name)
{
    const json_t *meta = json_object_get(parent, "metadata");
    const char *pname = json_string_value(json_object_get(meta, "name"));
    json_t *tc = json_deep_copy(json_object_get(json_object_get(parent, "spec"), "triggerCapture"));
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, "
                     "s:{s:o}}",
                     "apiVersion", GV, "kind", "MLDiagnosticsConnection", "metadata", "name", name,
                     "namespace", json_string_value(json_object_get(meta, "namespace")), "labels",
                     "diagon.gke.io/schedule", pname, "ownerReferences", "apiVersion", GV, "kind",
                     "MLDiagnosticsConnection", "name", pname, "uid",
                     json_string_value(json_object_get(meta, "uid")), "controller", 1,
                     "blockOwnerDeletion", 1, "spec", "triggerCapture", tc ? tc : json_object());
}

static int64_t time_of(const char *rfc3339)
{
    time_t t;
    return rfc3339 && k8s_time_parse_rfc3339(rfc3339, &t) == 0 ? (int64_t)t : -1;
}

static bool named(const struct op_schedule_in *in, const char *name)
{
    for (size_t i = 0; i < in->n; i++)
        if (!strcmp(in->children[i].name, name))
            return true;
    return false;
}

/* The unfinished children, as status.active. */
static json_t *active_of(const struct op_schedule_in *in, const char **first)
{
    json_t *a = json_array();
    *first = NULL;
    for (size_t i = 0; a && i < in->n; i++)
        if (!finished(&in->children[i])) {
            json_array_append_new(a, json_pack("{s:s}", "name", in->children[i].name));
            *first = *first ? *first : in->children[i].name;
        }
    return a;
}

/* The owed tick: create its child, or wait (Forbid); *last the tick done. */
static void tick(const struct op_schedule_in *in, const char *pname, json_t *active,
                 const char *busy, int64_t *last, struct op_schedule_plan *p, char *msg, size_t cap)
{
    int64_t owed = op_cron_last(
        &in->sched->cron,
        *last >= 0 ? *last : time_of(k8s_jstr2(in->parent, "metadata", "creationTimestamp")),
        in->now_s);
    char name[300], when[21];
    if (owed < 0)
        return;
    op_schedule_child_name(pname, owed, name, sizeof(name));
    k8s_time_rfc3339((time_t)owed, when);
    if (named(in, name)) {
        *last = owed; /* created already (our write of the status was lost) */
    } else if (busy && !in->sched->allow) {
        snprintf(msg, cap, "the tick at %s waits for %s to finish (concurrencyPolicy Forbid)", when,
                 busy);
    } else {
        p->create = child(in->parent, name);
        json_array_append_new(active, json_pack("{s:s}", "name", name));
        *last = owed;
    }
}

/* {lastScheduleTime, active, message}; NULL when the parent says so already. */
static json_t *status_of(const json_t *parent, int64_t last, json_t *active, const char *msg)
{
    char when[21];
    json_t *st = json_pack("{s:o, s:s}", "active", active, "message", msg);
    if (st && last >= 0) {
        k8s_time_rfc3339((time_t)last, when);
        json_object_set_new(st, "lastScheduleTime", json_string(when));
    }
    const json_t *was = json_object_get(parent, "status");
    bool same = st && json_equal(json_object_get(was, "active"), active) &&
                json_equal(json_object_get(was, "message"), json_object_get(st, "message")) &&
                json_equal(json_object_get(was, "lastScheduleTime"),
                           json_object_get(st, "lastScheduleTime"));
    if (same) {
        json_decref(st);
        return NULL;
    }
    json_t *out = json_is_object(was) ? json_deep_copy(was) : json_object();
    if (out && st)
        json_object_update(out, st);
    json_decref(st);
    return out;
}

int op_schedule_decide(const struct op_schedule_in *in, struct op_schedule_plan *out)
{
    struct op_schedule_plan p = {.after_s = -1};
    const char *pname = k8s_jstr2(in->parent, "metadata", "name"), *busy = NULL;
    int64_t last = time_of(k8s_jstr2(in->parent, "status", "lastScheduleTime"));
    char msg[400] = "suspended: no new captures", when[21];
    json_t *active = active_of(in, &busy);
    if (!active || !pname || history(in, pname, &p) < 0) {
        json_decref(active);
        op_schedule_done(&p);
        return -K8S_ENOMEM;
    }
    if (!in->sched->suspend) {
        msg[0] = '\0';
        tick(in, pname, active, busy, &last, &p, msg, sizeof(msg));
        int64_t from = last > in->now_s ? last : in->now_s;
        int64_t next = op_cron_next(&in->sched->cron, from);
        if (next >= 0) {
            k8s_time_rfc3339((time_t)next, when);
            if (!msg[0])
                snprintf(msg, sizeof(msg), "next capture at %s", when);
            p.after_s = next - in->now_s > 0 ? next - in->now_s : 1;
        } else if (!msg[0]) {
            snprintf(msg, sizeof(msg), "the schedule has no tick in the next five years");
        }
    }
    p.status = status_of(in->parent, last, active, msg);
    *out = p;
    return 0;
}
