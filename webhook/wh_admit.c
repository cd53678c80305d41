#include "wh_admit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_arena.h"
#include "k8s_log.h"
#include "k8s_time.h"
#include "wh_mutate.h"
#include "wh_review.h"
#include "wh_warn.h"

static const char *const outcome_names[WH_OUT_COUNT] = {"injected", "unchanged", "skipped",
                                                        "error",    "invalid",   "too_large"};

void wh_admit_init(struct wh_admit_ctx *ctx, const struct wh_config *cfg,
                   const struct wh_lookup *lookup, struct k8s_metrics *m)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->cfg = cfg;
    ctx->lookup = lookup;
    if (!m)
        return;
    for (int i = 0; i < WH_OUT_COUNT; i++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "outcome=\"%s\"", outcome_names[i]);
        ctx->outcomes[i] = k8s_metrics_counter(m, "mldiagnostics_webhook_requests_total",
                                               "Admission requests by outcome.", labels);
    }
    ctx->latency =
        k8s_metrics_histogram(m, "mldiagnostics_webhook_request_duration_seconds",
                              "Time from request arrival to response, sub-millisecond buckets.",
                              NULL, k8s_metrics_latency_buckets, k8s_metrics_latency_nbuckets);
    for (int f = 0; f < K8S_MLRUN_NFIELDS; f++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "field=\"%s\"", k8s_mlrun_fields[f].key);
        ctx->incomplete[f] = k8s_metrics_counter(
            m, "mldiagnostics_webhook_incomplete_identity_total",
            "Pods injected with an identity that lacks a field the google-cloud-mldiagnostics "
            "SDK requires (it refuses to start a run), by field.",
            labels);
    }
}

int wh_admit_text(int status, const char *line, enum wh_outcome outcome,
                  struct wh_admit_result *ret)
{
    char *body = NULL;
    if (asprintf(&body, "%s\n", line) < 0)
        return -K8S_ENOMEM;
    *ret = (struct wh_admit_result){.status = status,
                                    .body = body,
                                    .len = strlen(body),
                                    .content_type = "text/plain; charset=utf-8",
                                    .outcome = outcome};
    return 0;
}

static void account(const struct wh_admit_ctx *ctx, enum wh_outcome o, int64_t start_ns)
{
    k8s_metric_add(ctx->outcomes[o], 1);
    k8s_metric_observe_ns(ctx->latency, k8s_mono_ns() - start_ns);
}

static void account_identity(const struct wh_admit_ctx *ctx, const struct wh_mutate_out *mo,
                             enum wh_outcome o)
{
    for (int f = 0; o == WH_OUT_INJECTED && f < K8S_MLRUN_NFIELDS; f++)
        if (mo->missing & (1u << f))
            k8s_metric_add(ctx->incomplete[f], 1);
}

void wh_admit_note(const struct wh_admit_ctx *ctx, enum wh_outcome outcome, const char *reason,
                   int64_t start_ns)
{
    account(ctx, outcome, start_ns);
    k8s_log_json(K8S_LOG_WARN, "admission",
                 json_pack("{s:s, s:s, s:I}", "decision", outcome_names[outcome], "reason", reason,
                           "us", (json_int_t)((k8s_mono_ns() - start_ns) / 1000)));
}

static void log_decision(const struct wh_review *rv, const struct wh_mutate_out *mo,
                         enum wh_outcome o, int64_t start_ns)
{
    int level = o == WH_OUT_ERROR ? K8S_LOG_WARN : K8S_LOG_INFO;
    if (!k8s_log_enabled(level))
        return;
    const struct k8s_log_field f[] = {
        {"uid", rv->uid},
        {"namespace", rv->ns},
        {"object", rv->what},
        {"workload", mo->workload},
        {"decision", outcome_names[o]},
        {"reason", mo->reason},
        {"operations", NULL, (long long)mo->text.n},
        {"warnings", NULL, (long long)json_array_size(mo->warnings)},
        {"us", NULL, (k8s_mono_ns() - start_ns) / 1000},
    };
    k8s_log_fields(level, "admission", f, sizeof(f) / sizeof(f[0]));
}

static enum wh_outcome classify(const struct wh_mutate_out *mo, int r)
{
    if (r < 0)
        return WH_OUT_ERROR;
    if (!mo->inject)
        return WH_OUT_SKIPPED;
    return mo->text.n ? WH_OUT_INJECTED : WH_OUT_UNCHANGED;
}

/* Run the core for a pod CREATE; anything else is allowed untouched. */
static int decide(const struct wh_admit_ctx *ctx, const struct wh_review *rv, int64_t start_ns,
                  struct k8s_arena *arena, struct wh_mutate_out *mo)
{
    if (!rv->pod_create) {
        memset(mo, 0, sizeof(*mo));
        mo->warnings = json_array();
        snprintf(mo->reason, sizeof(mo->reason), "not a pod CREATE (%s %s)", rv->operation,
                 rv->what);
        return mo->warnings ? 0 : -K8S_ENOMEM;
    }
    struct wh_mutate_in in = {.view = &rv->pod,
                              .ns = rv->ns,
                              .path = "",
                              .now = time(NULL),
                              .deadline_ns = start_ns + ctx->cfg->budget_ns,
                              .text_only = true,
                              .arena = arena};
    return wh_mutate(ctx->cfg, ctx->lookup, &in, mo);
}

static int admit(const struct wh_admit_ctx *ctx, const char *body, size_t len, int64_t start_ns,
                 struct k8s_arena *arena, struct wh_admit_result *ret);

static int respond(const struct wh_review *rv, struct wh_mutate_out *mo, enum wh_outcome o,
                   struct wh_admit_result *ret)
{
    json_t *warnings = mo->warnings ? json_incref(mo->warnings) : json_array();
    if (o == WH_OUT_ERROR)
        wh_warnf(warnings, "mldiagnostics: internal error (out of memory); pod admitted "
                           "without injection");
    char *body =
        wh_review_respond_text(rv, o == WH_OUT_ERROR ? NULL : &mo->text, warnings, &ret->len);
    json_decref(warnings);
    if (!body)
        return -K8S_ENOMEM;
    ret->status = 200;
    ret->body = body;
    ret->content_type = "application/json";
    ret->outcome = o;
    return 0;
}

/* Each server thread keeps one arena for its requests: the buffers the
 * request's code is handed it for, and (the scope, entered here alone)
 * every JSON value jansson makes meanwhile. */
static pthread_key_t arena_key;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;

static void arena_key_init(void)
{
    (void)pthread_key_create(&arena_key, (void (*)(void *))k8s_arena_free);
}

static struct k8s_arena *thread_arena(void)
{
    pthread_once(&arena_once, arena_key_init);
    struct k8s_arena *a = pthread_getspecific(arena_key);
    if (!a && (a = k8s_arena_new(256 * 1024)))
        (void)pthread_setspecific(arena_key, a);
    return a;
}

int wh_admit(const struct wh_admit_ctx *ctx, const char *body, size_t len, int64_t start_ns,
             struct wh_admit_result *ret)
{
    struct k8s_arena *arena = thread_arena(); /* NULL (out of memory): malloc */
    if (arena)
        k8s_arena_enter(arena);
    int r = admit(ctx, body, len, start_ns, arena, ret);
    if (arena) { /* every JSON value of the request has been released */
        k8s_arena_leave();
        k8s_arena_reset(arena);
    }
    return r;
}

static int admit(const struct wh_admit_ctx *ctx, const char *body, size_t len, int64_t start_ns,
                 struct k8s_arena *arena, struct wh_admit_result *ret)
{
    struct wh_review rv;
    struct k8s_error err = {0};
    if (wh_review_decode(body, len, arena, &rv, &err) < 0) {
        wh_admit_note(ctx, WH_OUT_INVALID, err.message, start_ns);
        return wh_admit_text(400, err.message, WH_OUT_INVALID, ret);
    }
    struct wh_mutate_out mo = {0};
    int r = decide(ctx, &rv, start_ns, arena, &mo);
    enum wh_outcome o = classify(&mo, r);
    if (r < 0)
        snprintf(mo.reason, sizeof(mo.reason), "internal error: %s", k8s_strerror(r));
    r = respond(&rv, &mo, o, ret);
    account(ctx, o, start_ns);
    account_identity(ctx, &mo, o);
    log_decision(&rv, &mo, o, start_ns);
    /* built here, in the request's arena, from nothing but its own values:
     * their memory returns with the arena, without walking the trees */
    k8s_arena_forget(&mo.warnings);
    k8s_jsonpatch_text_done(&mo.text);
    wh_review_done(&rv);
    return r;
}
