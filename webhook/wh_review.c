#include "wh_review.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_codec.h"
#include "k8s_json.h"
#include "k8s_jsonload.h"

#define GROUP "admission.k8s.io/"

/* The members of a review that the webhook reads (wh_mutate reads nothing
 * else of the pod); everything else is validated and skipped. The spec is
 * read by wh_podspec in the same pass. */

static const struct k8s_json_filter f_meta[] = {
    {"name", NULL},   {"generateName", NULL},      {"namespace", NULL},
    {"labels", NULL}, {"annotations", NULL},       {"ownerReferences", NULL},
    {"uid", NULL},    {"creationTimestamp", NULL}, {NULL}};
static const struct k8s_json_filter f_object[] = {{"apiVersion", NULL},
                                                  {"kind", NULL},
                                                  {"metadata", f_meta},
                                                  {"spec", NULL, wh_podspec_pull},
                                                  {NULL}};
static const struct k8s_json_filter f_request[] = {
    {"uid", NULL},        {"kind", NULL}, {"resource", NULL},  {"subResource", NULL},
    {"namespace", NULL},  {"name", NULL}, {"operation", NULL}, {"dryRun", NULL},
    {"object", f_object}, {NULL}};
const struct k8s_json_filter wh_review_filter[] = {
    {"apiVersion", NULL}, {"kind", NULL}, {"request", f_request}, {NULL}};

static const char *str_at(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int check_envelope(json_t *root, enum wh_review_version *ver, struct k8s_error *reterr)
{
    if (!json_is_object(root))
        return k8s_error_set(reterr, -K8S_EINVAL, "not an AdmissionReview: body is not an object");
    const char *api = str_at(root, "apiVersion"), *kind = str_at(root, "kind");
    if (!api || (strcmp(api, GROUP "v1") && strcmp(api, GROUP "v1beta1")))
        return k8s_error_set(
            reterr, -K8S_EINVAL,
            "not an AdmissionReview: apiVersion \"%.60s\" is not %sv1 or %sv1beta1", api ? api : "",
            GROUP, GROUP);
    if (!kind || strcmp(kind, "AdmissionReview"))
        return k8s_error_set(reterr, -K8S_EINVAL, "not an AdmissionReview: kind is \"%.60s\"",
                             kind ? kind : "");
    *ver = strcmp(api, GROUP "v1") ? WH_REVIEW_V1BETA1 : WH_REVIEW_V1;
    json_t *req = json_object_get(root, "request");
    if (!json_is_object(req))
        return k8s_error_set(reterr, -K8S_EINVAL, "AdmissionReview has no request object");
    const char *uid = str_at(req, "uid");
    if (!uid || !*uid)
        return k8s_error_set(reterr, -K8S_EINVAL, "AdmissionReview request has no uid");
    return 0;
}

static bool is_pod_create(const json_t *req)
{
    const json_t *kind = json_object_get(req, "kind");
    const json_t *res = json_object_get(req, "resource");
    const char *group = str_at(kind, "group"), *k = str_at(kind, "kind");
    const char *resource = str_at(res, "resource"), *sub = str_at(req, "subResource");
    const char *op = str_at(req, "operation");
    return k && !strcmp(k, "Pod") && (!group || !*group) &&
           (!resource || !strcmp(resource, "pods")) && (!sub || !*sub) && op &&
           !strcmp(op, "CREATE");
}

static void describe(struct wh_review *rv, const json_t *req)
{
    const json_t *meta = json_object_get(rv->object, "metadata");
    const char *name = str_at(req, "name");
    const char *gen = str_at(meta, "generateName");
    if (!name || !*name)
        name = str_at(meta, "name");
    const char *kind = str_at(json_object_get(req, "kind"), "kind");
    if (name && *name)
        snprintf(rv->what, sizeof(rv->what), "%s %s/%s", kind ? kind : "?", rv->ns, name);
    else
        snprintf(rv->what, sizeof(rv->what), "%s %s/%s*", kind ? kind : "?", rv->ns,
                 gen ? gen : "");
}

int wh_review_decode(const char *body, size_t len, struct wh_review *ret, struct k8s_error *reterr)
{
    json_t *root = NULL;
    struct wh_podspec spec = {0};
    int r = k8s_json_load_pull(body, len, wh_review_filter, &spec, &root, reterr);
    if (r < 0) {
        wh_podspec_done(&spec);
        k8s_error_prefix(reterr, "request body is not valid JSON");
        return r;
    }
    struct wh_review rv = {.root = root, .spec = spec};
    r = check_envelope(root, &rv.version, reterr);
    if (r < 0) {
        wh_podspec_done(&rv.spec);
        json_decref(root);
        return r;
    }
    json_t *req = json_object_get(root, "request");
    rv.uid = str_at(req, "uid");
    rv.object = json_object_get(req, "object");
    rv.ns = str_at(req, "namespace");
    if (!rv.ns || !*rv.ns)
        rv.ns = str_at(json_object_get(rv.object, "metadata"), "namespace");
    rv.ns = rv.ns ? rv.ns : "";
    rv.operation = str_at(req, "operation") ? str_at(req, "operation") : "";
    rv.pod_create = is_pod_create(req);
    rv.dry_run = json_is_true(json_object_get(req, "dryRun"));
    describe(&rv, req);
    *ret = rv;
    return 0;
}

void wh_review_done(struct wh_review *rv)
{
    if (!rv)
        return;
    json_decref(rv->root);
    rv->root = NULL;
    wh_podspec_done(&rv->spec);
}

static const char *const api_versions[] = {GROUP "v1", GROUP "v1beta1"};

/* The envelope is written directly: the patch goes in as base64 without a
 * second pass of JSON escaping over it. raw: the patch's JSON text, NULL
 * for none. */
static char *respond(const struct wh_review *rv, const char *raw, size_t raw_len,
                     const json_t *warnings, size_t *ret_len)
{
    struct k8s_buf out;
    k8s_buf_init(&out, 1 << 29);
    char *tail; /* typical sizes up front: the base64 of a few KiB of patch, the envelope */
    int r = k8s_buf_reserve(&out, 512 + raw_len / 3 * 4 + 4, &tail);
    r = r ? r
          : k8s_buf_cat(&out, "{\"apiVersion\":\"", api_versions[rv->version],
                        "\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":", NULL);
    r = r ? r : k8s_json_write_string(rv->uid, strlen(rv->uid), &out);
    r = r ? r : k8s_buf_appends(&out, ",\"allowed\":true");
    if (r == 0 && raw) {
        r = k8s_buf_appends(&out, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
        r = r ? r : k8s_base64_append(&out, raw, raw_len);
        r = r ? r : k8s_buf_appends(&out, "\"");
    }
    if (r == 0 && json_array_size(warnings) > 0) {
        r = k8s_buf_appends(&out, ",\"warnings\":");
        r = r ? r : k8s_json_write(warnings, &out);
    }
    r = r ? r : k8s_buf_appends(&out, "}}");
    return r ? NULL : k8s_buf_take(&out, ret_len);
}

char *wh_review_respond(const struct wh_review *rv, const json_t *patch, const json_t *warnings,
                        size_t *ret_len)
{
    struct k8s_buf raw;
    k8s_buf_init(&raw, 1 << 28);
    bool patched = json_array_size(patch) > 0;
    if (patched && k8s_json_write(patch, &raw) < 0)
        return NULL;
    char *body = respond(rv, patched ? raw.data : NULL, raw.len, warnings, ret_len);
    k8s_buf_done(&raw);
    return body;
}

char *wh_review_respond_text(const struct wh_review *rv, struct k8s_jsonpatch_text *patch,
                             const json_t *warnings, size_t *ret_len)
{
    size_t len = 0;
    const char *raw = patch && patch->n ? k8s_jsonpatch_text_json(patch, &len) : NULL;
    if (patch && patch->n && !raw)
        return NULL;
    return respond(rv, raw, len, warnings, ret_len);
}
