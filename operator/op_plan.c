#include "op_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jget.h"
#include "k8s_time.h"
#include "op_proto.h"
#include "op_status.h"

#define SEC      K8S_NSEC_PER_SEC
#define LIST_MAX 20 /* pods named in one message */

/* ---------- small helpers ---------- */

void op_session_id(time_t start, char out[static 20])
{
    struct tm tm;
    gmtime_r(&start, &tm);
    strftime(out, 20, "%Y_%m_%d_%H_%M_%S", &tm);
}

bool op_phase_terminal(const char *phase)
{
    return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
}

static json_int_t generation(const json_t *obj)
{
    return json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation"));
}

static json_t *status_copy(const json_t *obj)
{
    const json_t *st = json_object_get(obj, "status");
    json_t *s = json_is_object(st) ? json_deep_copy(st) : json_object();
    return s ? s : json_object();
}

static time_t now_s(const struct op_plan_in *in)
{
    return (time_t)(in->now_ns / SEC);
}

/* Append effect e. The list's length is bounded by construction: at most
 * CANCEL, then one branch's CLAIM, WRITE, SUBMIT, EVENT, and an ending. */
static void fx(struct op_plan *p, enum op_effect e)
{
    if (p->n_fx < OP_PLAN_FX_MAX)
        p->fx[p->n_fx++] = e;
}

bool op_plan_has(const struct op_plan *p, enum op_effect e)
{
    for (size_t i = 0; i < p->n_fx; i++)
        if (p->fx[i] == e)
            return true;
    return false;
}

/* The Event and log line that follow the write (OP_FX_EVENT, listed by
 * written()). */
static void say(struct op_plan *p, const char *type, const char *reason, const char *phase,
                const char *msg)
{
    p->event.type = type;
    p->event.reason = reason;
    snprintf(p->event.msg, sizeof(p->event.msg), "%s", msg);
    json_decref(p->event.log);
    p->event.log = json_pack("{s:s, s:s}", "phase", phase, "message", msg);
}

static void oom(struct op_plan *p)
{
    k8s_error_set(&p->err, -K8S_ENOMEM, "out of memory");
    fx(p, OP_FX_RETRY);
}

/* Write status, then tell (when there is something to say), then give up
 * the pods (release). */
static void written(struct op_plan *p, json_t *status, bool release)
{
    if (!status)
        return oom(p);
    p->status = status;
    fx(p, OP_FX_WRITE);
    if (p->event.type || p->event.log || p->event.outcome != OP_OUT_NONE)
        fx(p, OP_FX_EVENT);
    if (release)
        fx(p, OP_FX_RELEASE);
}

static void requeue(struct op_plan *p, int64_t after_ns)
{
    p->after_ns = after_ns;
    fx(p, OP_FX_REQUEUE);
}

/* "3 hosts", or "3 of 16 hosts" when spec.hosts chose them from 16. */
static const char *hosts_of(size_t n, size_t of, char *out, size_t cap)
{
    if (of)
        snprintf(out, cap, "%zu of %zu host%s", n, of, of > 1 ? "s" : "");
    else
        snprintf(out, cap, "%zu host%s", n, n > 1 ? "s" : "");
    return out;
}

/* ---------- terminal outcomes ---------- */

static void fail(const struct op_plan_in *in, struct op_plan *p, const char *reason,
                 const char *msg)
{
    char when[21];
    const json_t *obj = in->obj;
    bool invalid = !strcmp(reason, "InvalidSpec");
    k8s_time_rfc3339(now_s(in), when);
    json_t *st = status_copy(obj);
    json_object_set_new(st, "phase", json_string("Failed"));
    json_object_set_new(st, "message", json_string(msg));
    json_object_set_new(st, "completionTime", json_string(when));
    json_object_set_new(st, "observedGeneration", json_integer(generation(obj)));
    json_object_set_new(st, "captureResult",
                        json_pack("{s:s, s:s}", "status", "Failed", "errorMessage", msg));
    if (invalid)
        op_condition_set(st, "Valid", "False", reason, msg, generation(obj), now_s(in));
    op_condition_set(st, "Complete", "True", "Failed", msg, generation(obj), now_s(in));
    p->event.outcome = invalid ? OP_OUT_INVALID : OP_OUT_FAILED;
    say(p, "Warning", reason, "Failed", msg);
    written(p, st, true);
}

/* "pod a: INTERNAL: Another profiling session active.; pod b: ..." */
static size_t failure_list(const struct op_run_view *r, char *out, size_t cap)
{
    size_t failed = 0, n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < r->n; i++) {
        const struct op_host_result *h = &r->results[i];
        if (h->code == OP_GRPC_OK)
            continue;
        if (failed++ < LIST_MAX && n < cap)
            n += (size_t)snprintf(out + n, cap - n, "%spod %s: %s%s%s", failed > 1 ? "; " : "",
                                  strchr(r->pods[i], '/') + 1, op_grpc_code_name(h->code),
                                  h->message[0] ? ": " : "", h->message);
    }
    if (failed > LIST_MAX && n < cap)
        snprintf(out + n, cap - n, "; and %zu more", failed - LIST_MAX);
    return failed;
}

/* status.hosts: every host in phase_override, or its outcome (results). */
static json_t *hosts_json(char *const *pods, char *const *files,
                          const struct op_host_result *results, size_t n,
                          const char *phase_override)
{
    json_t *hosts = json_array();
    for (size_t i = 0; hosts && i < n; i++) {
        const struct op_host_result *h = results ? &results[i] : NULL;
        const char *phase = phase_override          ? phase_override
                            : h->code == OP_GRPC_OK ? "Succeeded"
                                                    : "Failed";
        json_t *o = json_pack("{s:s, s:s}", "pod", strchr(pods[i], '/') + 1, "phase", phase);
        if (o && h && !phase_override && h->code == OP_GRPC_OK)
            json_object_set_new(o, "outputFile", json_string(files[i]));
        if (o && h && !phase_override && h->code != OP_GRPC_OK) {
            char e[400];
            snprintf(e, sizeof(e), "%s%s%s", op_grpc_code_name(h->code), h->message[0] ? ": " : "",
                     h->message);
            json_object_set_new(o, "error", json_string(e));
        }
        json_array_append_new(hosts, o);
    }
    return hosts;
}

/* When the requests left, first and last, for the log. */
static void wire_span(const struct op_run_view *r, int64_t *first, int64_t *last)
{
    *first = *last = 0;
    for (size_t i = 0; i < r->n; i++) {
        int64_t w = r->results[i].wire_ns;
        if (w && (!*first || w < *first))
            *first = w;
        if (w > *last)
            *last = w;
    }
}

/* Results are in: Succeeded or Failed. */
static void finish(const struct op_plan_in *in, struct op_plan *p)
{
    const struct op_run_view *run = &in->run;
    char failures[4096], msg[1400], when[21];
    size_t failed = failure_list(run, failures, sizeof(failures));
    bool ok = failed == 0;
    const char *s = run->n > 1 ? "s" : "";
    char hosts[80];
    if (ok)
        snprintf(msg, sizeof(msg), "captured %s into %s",
                 hosts_of(run->n, run->of, hosts, sizeof(hosts)), run->location);
    else
        snprintf(msg, sizeof(msg), "%zu of %zu host%s failed", failed, run->n, s);
    k8s_time_rfc3339(now_s(in), when);
    json_t *st = status_copy(in->obj);
    json_object_set_new(st, "phase", json_string(ok ? "Succeeded" : "Failed"));
    json_object_set_new(st, "message", json_string(msg));
    json_object_set_new(st, "completionTime", json_string(when));
    json_object_set_new(st, "observedGeneration", json_integer(generation(in->obj)));
    json_object_set_new(st, "hosts", hosts_json(run->pods, run->files, run->results, run->n, NULL));
    json_t *res = json_pack("{s:s, s:s}", "status", ok ? "Succeeded" : "Failed", "outputLocation",
                            run->location);
    if (res && !ok)
        json_object_set_new(res, "errorMessage", json_string(failures));
    json_object_set_new(st, "captureResult", res);
    op_condition_set(st, "Complete", "True", ok ? "Succeeded" : "Failed", ok ? msg : failures,
                     generation(in->obj), now_s(in));
    p->event.outcome = ok ? OP_OUT_SUCCEEDED : OP_OUT_FAILED;
    p->event.observe_rpcs = true;
    time_t started = 0;
    const char *st_time = k8s_jstr2(in->obj, "status", "startTime");
    if (st_time && k8s_time_parse_rfc3339(st_time, &started) == 0)
        p->event.duration_ns = (int64_t)(now_s(in) - started) * SEC;
    say(p, ok ? "Normal" : "Warning", ok ? "Succeeded" : "Failed", ok ? "Succeeded" : "Failed",
        ok ? msg : failures);
    int64_t first, last;
    wire_span(run, &first, &last);
    json_object_update_missing_new(
        p->event.log, json_pack("{s:I, s:I, s:I}", "hosts", (json_int_t)run->n, "firstSentNs",
                                (json_int_t)first, "lastSentNs", (json_int_t)last));
    written(p, st, true);
}

/* Shutdown cancelled the RPCs: keep Running, say so, for the next leader. */
static void record_interrupted(const struct op_plan_in *in, struct op_plan *p)
{
    const struct op_run_view *run = &in->run;
    char msg[400];
    snprintf(msg, sizeof(msg),
             "interrupted: the operator shut down during attempt %d of %d (session %s); "
             "the next leader resumes it",
             run->attempt, (int)in->cfg->capture_max_retries + 1, run->session);
    json_t *st = status_copy(in->obj);
    json_object_set_new(st, "message", json_string(msg));
    json_object_set_new(st, "hosts",
                        hosts_json(run->pods, run->files, NULL, run->n, "Interrupted"));
    op_condition_set(st, "Complete", "False", "Interrupted", msg, generation(in->obj), now_s(in));
    p->event.outcome = OP_OUT_INTERRUPTED;
    say(p, "Warning", "Interrupted", "Running", msg);
    written(p, st, true);
}

/* ---------- Pending ---------- */

/* Pending with msg (nothing to write when it says so already). */
static void write_pending(const struct op_plan_in *in, struct op_plan *p, const char *msg,
                          bool ready)
{
    const json_t *obj = in->obj;
    const char *was = k8s_jstr2(obj, "status", "message");
    const char *phase = k8s_jstr2(obj, "status", "phase");
    bool was_pending = phase && !strcmp(phase, "Pending");
    if (was && !strcmp(was, msg) && was_pending)
        return; /* nothing new to say */
    json_t *st = status_copy(obj);
    json_object_set_new(st, "phase", json_string("Pending"));
    json_object_set_new(st, "message", json_string(msg));
    json_object_set_new(st, "observedGeneration", json_integer(generation(obj)));
    op_condition_set(st, "Valid", "True", "Valid", "the spec is valid", generation(obj), now_s(in));
    if (!ready)
        op_condition_set(st, "TargetsReady", "False", "Waiting", msg, generation(obj), now_s(in));
    op_condition_set(st, "Complete", "False", "Pending", msg, generation(obj), now_s(in));
    if (!was_pending)
        say(p, "Normal", "Pending", "Pending", msg);
    written(p, st, false);
}

/* ---------- dispatch ---------- */

static json_t *running_status(const struct op_plan_in *in, const struct op_plan_dispatch *d,
                              int64_t duration_s)
{
    char when[21], msg[400];
    const json_t *obj = in->obj;
    json_int_t gen = generation(obj);
    k8s_time_rfc3339(now_s(in), when);
    char hosts[80];
    snprintf(msg, sizeof(msg), "capturing %s for %llds (session %s, attempt %d of %d)",
             hosts_of(d->n, d->of, hosts, sizeof(hosts)), (long long)duration_s, d->session,
             d->attempt, (int)in->cfg->capture_max_retries + 1);
    json_t *st = status_copy(obj);
    json_object_set_new(st, "phase", json_string("Running"));
    json_object_set_new(st, "message", json_string(msg));
    if (!json_is_string(json_object_get(st, "startTime")))
        json_object_set_new(st, "startTime", json_string(when));
    json_object_set_new(st, "sessionId", json_string(d->session));
    json_object_set_new(st, "attempts", json_integer(d->attempt));
    json_object_set_new(st, "observedGeneration", json_integer(gen));
    json_object_set_new(st, "hosts", hosts_json(d->pods, d->files, NULL, d->n, "Running"));
    json_object_del(st, "captureResult");
    json_object_del(st, "completionTime");
    op_condition_set(st, "Valid", "True", "Valid", "the spec is valid", gen, now_s(in));
    op_condition_set(st, "TargetsReady", "True", "Ready", "every target pod is Running", gen,
                     now_s(in));
    op_condition_set(st, "Complete", "False", "InProgress", msg, gen, now_s(in));
    return st;
}

/* The host_name a Profile request carries for a pod: its name, or without
 * the override "<ip>:<port>" as xprof's own client names hosts. The
 * profiler names its file after it, so it is never empty: JAX's server
 * (0.10) writes "<root>/<session>/<host_name>.xplane.pb" verbatim, and an
 * empty name would make every host write the same ".xplane.pb". */
static void host_name(const struct op_target *t, int port, bool override, char *buf, size_t cap)
{
    bool v6 = strchr(t->ip, ':') != NULL;
    if (override)
        snprintf(buf, cap, "%s", t->pod);
    else
        snprintf(buf, cap, "%s%s%s:%d", v6 ? "[" : "", t->ip, v6 ? "]" : "", port);
}

/* The file a profiler writes for host_name: its ':' become '_'. */
static void file_stem(const char *host, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", host);
    for (char *c = buf; *c; c++)
        if (*c == ':')
            *c = '_';
}

/* The pods to claim, the host names they are sent, the files they write
 * and the relay's targets. */
static bool dispatch_hosts(const struct op_plan_in *in, const struct op_spec *s,
                           const struct op_targets *t, struct op_plan_dispatch *d)
{
    d->n = t->n;
    d->pods = calloc(t->n, sizeof(*d->pods));
    d->files = calloc(t->n, sizeof(*d->files));
    d->hosts = calloc(t->n, sizeof(*d->hosts));
    d->n_hosts = d->hosts ? t->n : 0;
    d->targets = calloc(t->n, sizeof(*d->targets));
    if (!d->pods || !d->files || !d->hosts || !d->targets)
        return false;
    bool override = !in->cfg->disable_hostname_override;
    for (size_t i = 0; i < t->n; i++) {
        char host[320], file[320];
        host_name(&t->v[i], s->port, override, host, sizeof(host));
        file_stem(host, file, sizeof(file));
        if (!(d->hosts[i] = strdup(host)))
            return false;
        if (asprintf(&d->pods[i], "%s/%s", s->pod_namespace, t->v[i].pod) < 0) {
            d->pods[i] = NULL; /* asprintf leaves it undefined */
            return false;
        }
        if (asprintf(&d->files[i], "%s/%s.xplane.pb", d->location, file) < 0) {
            d->files[i] = NULL;
            return false;
        }
        d->targets[i] = (struct op_relay_target){d->hosts[i], t->v[i].ip};
    }
    return true;
}

/* The batch: deadline = max(60 s, 2 × duration) + start delay, capped by
 * --sidecar-timeout (DESIGN §4.3). */
static void dispatch_batch(const struct op_plan_in *in, const struct op_spec *s,
                           struct op_plan_dispatch *d, int64_t start_ns)
{
    int64_t dur_ms = s->duration_s * 1000, delay_ms = op_spec_start_delay_ms(s, d->n);
    int64_t deadline = (dur_ms * 2 > 60000 ? dur_ms * 2 : 60000) + delay_ms;
    int64_t ceiling = in->cfg->sidecar_timeout_ns / K8S_NSEC_PER_MSEC;
    d->batch = (struct op_batch_spec){
        .targets = d->targets,
        .n = d->n,
        .port = s->port,
        .duration_ms = (uint64_t)dur_ms,
        .levels = {(uint32_t)s->options.host_tracer_level, (uint32_t)s->options.device_tracer_level,
                   (uint32_t)s->options.python_tracer_level},
        .start_timestamp_ns = (uint64_t)start_ns,
        .repository_root = d->root,
        .session_id = d->session,
        .deadline_ms = deadline < ceiling ? deadline : ceiling,
        .max_retries = (int)in->cfg->capture_max_retries,
    };
    d->expected_ns = (delay_ms + dur_ms + 2000) * K8S_NSEC_PER_MSEC;
}

/* Claim the targets, write Running, send the RPCs (session NULL: a new
 * one from the start time). With busy (the claim failed) a new capture
 * waits in Pending saying so; a resumed one looks again quietly. */
static void dispatch(const struct op_plan_in *in, struct op_plan *p, int attempt,
                     const char *session)
{
    const struct op_spec *s = &p->spec;
    const struct op_targets *t = in->targets;
    if (in->busy) {
        if (!session)
            write_pending(in, p, in->busy, true);
        return requeue(p, OP_BUSY_RECHECK_NS);
    }
    struct op_plan_dispatch *d = calloc(1, sizeof(*d));
    if (!(p->dispatch = d))
        return oom(p);
    int64_t start_ns = in->now_ns + op_spec_start_delay_ms(s, t->n) * K8S_NSEC_PER_MSEC;
    if (session)
        snprintf(d->session, sizeof(d->session), "%s", session);
    else
        op_session_id((time_t)(start_ns / SEC), d->session);
    d->attempt = attempt;
    d->of = t->of;
    d->resumed = session != NULL;
    snprintf(d->root, sizeof(d->root), "%s/plugins/profile", s->storage);
    snprintf(d->location, sizeof(d->location), "%s/%s", d->root, d->session);
    if (!dispatch_hosts(in, s, t, d))
        return oom(p);
    dispatch_batch(in, s, d, start_ns);
    char msg[300];
    char hosts[80];
    snprintf(msg, sizeof(msg), "%s %s, session %s, attempt %d",
             attempt > 1 ? "resumed the capture on" : "capturing",
             hosts_of(t->n, t->of, hosts, sizeof(hosts)), d->session, attempt);
    say(p, "Normal", attempt > 1 ? "Resumed" : "Started", "Running", msg);
    p->status = running_status(in, d, s->duration_s);
    fx(p, OP_FX_CLAIM);
    fx(p, OP_FX_WRITE);
    fx(p, OP_FX_SUBMIT);
    fx(p, OP_FX_EVENT);
}

/* ---------- the phases ---------- */

/* Pods that exist but are not ready: wait, up to --pod-ready-timeout
 * after TargetsReady turned False. */
static void wait_ready(const struct op_plan_in *in, struct op_plan *p)
{
    const struct op_targets *t = in->targets;
    time_t since = op_condition_since(json_object_get(in->obj, "status"), "TargetsReady", "False");
    int64_t limit = in->cfg->pod_ready_timeout_ns / SEC;
    if (since && now_s(in) - since >= limit) {
        char msg[1200];
        snprintf(msg, sizeof(msg), "target pods not ready after %llds: %s", (long long)limit,
                 t->why);
        return fail(in, p, "TargetsNotReady", msg);
    }
    write_pending(in, p, t->why, false);
    int64_t quarter = in->cfg->pod_ready_timeout_ns / 4;
    requeue(p, OP_WAIT_RECHECK_NS < quarter ? OP_WAIT_RECHECK_NS : quarter);
}

static void pending(const struct op_plan_in *in, struct op_plan *p)
{
    const struct op_targets *t = in->targets;
    struct k8s_error verr;
    if (!t) {
        fx(p, OP_FX_RESOLVE);
    } else if (t->state == OP_TARGETS_FAIL && t->n_absent && in->absent == OP_ABSENT_UNASKED) {
        /* the cache said "not found": does the API server agree? A cache
         * can lag a pod or workload created just before the capture. */
        p->confirm = t->absent;
        p->n_confirm = t->n_absent;
        fx(p, OP_FX_CONFIRM);
    } else if (t->state == OP_TARGETS_FAIL && t->n_absent && in->absent == OP_ABSENT_FOUND) {
        requeue(p, OP_CACHE_RECHECK_NS); /* there after all: let the cache catch up */
    } else if (t->state == OP_TARGETS_FAIL) {
        fail(in, p, "TargetsNotFound", t->why);
    } else if (t->state == OP_TARGETS_WAIT) {
        wait_ready(in, p);
    } else if (op_spec_check_sidecar(&p->spec, t->n, in->cfg->sidecar_timeout_ns, &verr) < 0) {
        fail(in, p, "InvalidSpec", verr.message); /* more hosts, a longer start delay */
    } else {
        dispatch(in, p, 1, NULL);
    }
}

/* Running in the status, nothing in flight here: resume or give up. */
static void resume(const struct op_plan_in *in, struct op_plan *p)
{
    const json_t *status = json_object_get(in->obj, "status");
    json_int_t attempts = json_integer_value(json_object_get(status, "attempts"));
    const char *session = json_string_value(json_object_get(status, "sessionId"));
    const char *last = json_string_value(json_object_get(status, "message"));
    int64_t max = in->cfg->capture_max_retries;
    if (attempts > max || !session || strlen(session) != 19) {
        char msg[900];
        snprintf(msg, sizeof(msg),
                 "interrupted %lld time%s, no attempts left (--capture-max-retries=%lld); "
                 "last: %s",
                 (long long)attempts, attempts == 1 ? "" : "s", (long long)max, last ? last : "-");
        return fail(in, p, "Interrupted", msg);
    }
    const struct op_targets *t = in->targets;
    struct k8s_error verr;
    if (!t) {
        fx(p, OP_FX_RESOLVE);
    } else if (t->state != OP_TARGETS_READY) {
        char msg[1200];
        snprintf(msg, sizeof(msg), "cannot resume the interrupted capture: %s", t->why);
        fail(in, p, "TargetsNotReady", msg);
    } else if (op_spec_check_sidecar(&p->spec, t->n, in->cfg->sidecar_timeout_ns, &verr) < 0) {
        fail(in, p, "InvalidSpec", verr.message);
    } else {
        dispatch(in, p, (int)attempts + 1, session);
    }
}

/* The resource exists, and the record (if any) is about it. */
static void decide_live(const struct op_plan_in *in, struct op_plan *p)
{
    const char *phase = k8s_jstr2(in->obj, "status", "phase");
    enum op_run_state run = in->run.state;
    if (op_phase_terminal(phase)) {
        if (run == OP_RUN_NONE) /* terminal resources are not re-run */
            fx(p, OP_FX_FORGET);
        return;
    }
    if (run == OP_RUN_LIVE)
        return;
    if (run == OP_RUN_FINISHED)
        return finish(in, p);
    if (run == OP_RUN_INTERRUPTED)
        return record_interrupted(in, p);
    if (in->stopping)
        return;
    struct k8s_error verr;
    const struct op_config *cfg = in->cfg;
    struct op_spec_limits lim = {cfg->max_capture_duration_ns, cfg->allow_cross_namespace,
                                 cfg->sidecar_timeout_ns};
    if (op_spec_parse(in->obj, &lim, &p->spec, &verr) < 0)
        return fail(in, p, "InvalidSpec", verr.message);
    p->has_spec = true;
    if (phase && !strcmp(phase, "Running")) {
        resume(in, p);
    } else if (phase && !strcmp(phase, "Pending")) {
        pending(in, p);
    } else { /* new: say it is valid, then go on from the object as written */
        write_pending(in, p, "validated; resolving the target pods", true);
        fx(p, OP_FX_AGAIN);
    }
}

void op_plan_decide(const struct op_plan_in *in, struct op_plan *p)
{
    memset(p, 0, sizeof(*p));
    p->event.duration_ns = -1;
    const json_t *meta = json_object_get(in->obj, "metadata");
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    bool gone = !in->obj || json_object_get(meta, "deletionTimestamp");
    bool replaced = !gone && in->run.uid && strcmp(in->run.uid, uid ? uid : "");
    if ((gone || replaced) && in->run.uid) { /* deleting a resource cancels its RPCs */
        p->cancel_reason = "cancelled: the resource was deleted";
        fx(p, OP_FX_CANCEL);
    }
    if (gone)
        return;
    if (!replaced)
        return decide_live(in, p);
    struct op_plan_in fresh = *in; /* a new resource of the same name */
    fresh.run = (struct op_run_view){0};
    decide_live(&fresh, p);
}

void op_plan_done(struct op_plan *p)
{
    json_decref(p->status);
    json_decref(p->event.log);
    struct op_plan_dispatch *d = p->dispatch;
    for (size_t i = 0; d && i < d->n; i++) {
        free(d->pods ? d->pods[i] : NULL);
        free(d->files ? d->files[i] : NULL);
    }
    for (size_t i = 0; d && i < d->n_hosts; i++)
        free(d->hosts[i]);
    if (d) {
        free(d->pods);
        free(d->files);
        free(d->hosts);
        free(d->targets);
        free(d);
    }
    if (p->has_spec)
        op_spec_done(&p->spec);
    memset(p, 0, sizeof(*p));
}
