#include "wh_review.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_codec.h"

#define GROUP "admission.k8s.io/"

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
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "not an AdmissionReview: apiVersion \"%.60s\" is not %sv1 or %sv1beta1",
                             api ? api : "", GROUP, GROUP);
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
    return k && !strcmp(k, "Pod") && (!group || !*group) && (!resource || !strcmp(resource, "pods")) &&
           (!sub || !*sub) && op && !strcmp(op, "CREATE");
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

int wh_review_decode(const char *body, size_t len, struct wh_review *ret,
                     struct k8s_error *reterr)
{
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root)
        return k8s_error_set(reterr, -K8S_EPARSE,
                             "request body is not valid JSON: %s (line %d, column %d)", je.text,
                             je.line, je.column);
    struct wh_review rv = {.root = root};
    int r = check_envelope(root, &rv.version, reterr);
    if (r < 0) {
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
}

static int attach_patch(json_t *resp, const json_t *patch)
{
    char *raw = json_dumps(patch, JSON_COMPACT);
    if (!raw)
        return -K8S_ENOMEM;
    char *b64 = k8s_base64_encode(raw, strlen(raw), NULL);
    free(raw);
    if (!b64)
        return -K8S_ENOMEM;
    int r = json_object_set_new(resp, "patchType", json_string("JSONPatch")) |
            json_object_set_new(resp, "patch", json_string(b64));
    free(b64);
    return r < 0 ? -K8S_ENOMEM : 0;
}

char *wh_review_respond(const struct wh_review *rv, const json_t *patch, const json_t *warnings,
                        size_t *ret_len)
{
    json_t *resp = json_pack("{s:s, s:b}", "uid", rv->uid, "allowed", 1);
    json_t *doc = json_pack("{s:s, s:s, s:o}", "apiVersion",
                            rv->version == WH_REVIEW_V1 ? GROUP "v1" : GROUP "v1beta1", "kind",
                            "AdmissionReview", "response", resp);
    char *out = NULL;
    if (!doc)
        return NULL;
    if (json_array_size(patch) > 0 && attach_patch(resp, patch) < 0)
        goto out_free_doc;
    if (json_array_size(warnings) > 0 &&
        json_object_set(resp, "warnings", (json_t *)warnings) < 0)
        goto out_free_doc;
    out = json_dumps(doc, JSON_COMPACT);
    if (out && ret_len)
        *ret_len = strlen(out);
out_free_doc:
    json_decref(doc);
    return out;
}
