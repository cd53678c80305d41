/*
 * libFuzzer target: AdmissionReview bytes → wh_admit → response. Every
 * input must get a well-formed answer (400/413 or a 200 AdmissionReview);
 * every patch returned must apply to the pod with the RFC 6902 applier, and
 * a second admission of the patched pod must need no operations.
 *
 * The pod the patch is checked against is the review as jansson reads it,
 * or, when jansson refuses only a number beyond its range (the webhook
 * checks the members it skips for syntax alone, by design: k8s_jsonload.h),
 * the webhook's own view of it: the members wh_review reads, kept as a
 * tree (view_filter below), which holds all that the mutation reads and
 * patches. Any other refusal of an admitted
 * input is a finding.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_arena.h"
#include "k8s_codec.h"
#include "k8s_jsonpatch.h"
#include "k8s_log.h"
#include "k8s_time.h"
#include "k8s_jsonload.h"
#include "wh_admit.h"
#include "wh_review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct wh_config cfg;
static struct wh_admit_ctx ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    k8s_arena_jansson_install();
    k8s_log_set_level(-1);
    wh_config_init(&cfg);
    cfg.standalone = true;
    cfg.cluster_name = "projects/p/locations/l/clusters/fuzz";
    struct k8s_error err;
    if (wh_config_finish(&cfg, &err) < 0)
        abort();
    wh_admit_init(&ctx, &cfg, NULL, NULL);
    return 0;
}

static json_t *answer(const char *body, size_t len, int *status)
{
    struct wh_admit_result res;
    if (wh_admit(&ctx, body, len, k8s_mono_ns(), &res) < 0)
        abort();
    *status = res.status;
    if (res.status != 200 && res.status != 400 && res.status != 413)
        abort();
    json_t *doc = res.status == 200 ? json_loadb(res.body, res.len, 0, NULL) : NULL;
    if (res.status == 200 && !json_is_object(doc))
        abort(); /* a 200 must carry a JSON AdmissionReview */
    free(res.body);
    return doc;
}

static json_t *patch_of(const json_t *resp)
{
    const char *b64 =
        json_string_value(json_object_get(json_object_get(resp, "response"), "patch"));
    if (!b64)
        return NULL;
    size_t n;
    unsigned char *raw = k8s_base64_decode(b64, strlen(b64), &n);
    json_t *p = raw ? json_loadb((char *)raw, n, 0, NULL) : NULL;
    free(raw);
    if (!json_is_array(p))
        abort();
    return p;
}

/* The members of a review the webhook reads (wh_review.c), kept as a
 * tree: the envelope, and of the object the metadata wh_meta reads and
 * the spec wh_podspec reads. */
static const struct k8s_json_filter f_container[] = {
    {"name", NULL}, {"env", NULL}, {"volumeMounts", NULL}, {"restartPolicy", NULL}, {NULL}};
static const struct k8s_json_filter f_volume[] = {{"name", NULL}, {NULL}};
static const struct k8s_json_filter f_spec[] = {
    {"containers", f_container}, {"initContainers", f_container}, {"volumes", f_volume}, {NULL}};
static const struct k8s_json_filter f_meta[] = {
    {"name", NULL},   {"generateName", NULL},      {"namespace", NULL},
    {"labels", NULL}, {"annotations", NULL},       {"ownerReferences", NULL},
    {"uid", NULL},    {"creationTimestamp", NULL}, {NULL}};
static const struct k8s_json_filter f_object[] = {
    {"apiVersion", NULL}, {"kind", NULL}, {"metadata", f_meta}, {"spec", f_spec}, {NULL}};
static const struct k8s_json_filter f_request[] = {
    {"uid", NULL},        {"kind", NULL}, {"resource", NULL},  {"subResource", NULL},
    {"namespace", NULL},  {"name", NULL}, {"operation", NULL}, {"dryRun", NULL},
    {"object", f_object}, {NULL}};
static const struct k8s_json_filter view_filter[] = {
    {"apiVersion", NULL}, {"kind", NULL}, {"request", f_request}, {NULL}};

/* The review to check the patch against (see the top of the file). */
static json_t *reference(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *doc = json_loadb((const char *)data, size, 0, &je);
    if (doc)
        return doc;
    if (json_error_code(&je) != json_error_numeric_overflow) {
        fprintf(stderr, "admitted with a patch, yet not JSON: %s\n", je.text);
        abort();
    }
    struct k8s_error err;
    if (k8s_json_load_filtered((const char *)data, size, view_filter, &doc, &err) < 0) {
        fprintf(stderr, "admitted with a patch, yet its reader refuses it: %s\n", err.message);
        abort();
    }
    return doc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int status;
    json_t *resp = answer((const char *)data, size, &status);
    json_t *patch = resp ? patch_of(resp) : NULL;
    if (!patch) {
        json_decref(resp);
        return 0;
    }
    json_t *review = reference(data, size);
    json_t *req = json_object_get(review, "request");
    json_t *patched = NULL;
    struct k8s_error err;
    if (k8s_jsonpatch_apply(json_object_get(req, "object"), patch, &patched, &err) < 0) {
        fprintf(stderr, "patch does not apply: %s\n", err.message);
        abort();
    }
    json_object_set_new(req, "object", patched);
    char *again = json_dumps(review, JSON_COMPACT);
    json_t *resp2 = answer(again, strlen(again), &status);
    json_t *patch2 = patch_of(resp2);
    if (patch2 && json_array_size(patch2) > 0) {
        fprintf(stderr, "not idempotent\n");
        abort();
    }
    free(again);
    json_decref(patch2);
    json_decref(resp2);
    json_decref(review);
    json_decref(patch);
    json_decref(resp);
    return 0;
}
