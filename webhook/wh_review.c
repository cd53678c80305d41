#include "wh_review.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_arena.h"

#include "k8s_buf.h"
#include "k8s_codec.h"
#include "k8s_json.h"
#include "k8s_jsonload.h"

#define GROUP "admission.k8s.io/"

/* The members of a review the webhook reads, each a string slot, an
 * object of its own, or read by its own reader; everything else is
 * validated and skipped. The pod's metadata and spec are read by wh_meta
 * and wh_podspec in the same pass, and no JSON value is built. */
enum slot {
    S_NONE,
    S_API,
    S_KIND,
    S_UID,
    S_GROUP,
    S_RKIND,
    S_RESOURCE,
    S_SUB,
    S_NS,
    S_NAME,
    S_OP,
    S_N
};
enum reader { X_STRING, X_OBJECT, X_REQUEST, X_DRY_RUN, X_POD };

struct field {
    const char *key;
    enum reader x;
    enum slot slot;             /* X_STRING */
    const struct field *fields; /* X_OBJECT, X_REQUEST: its members */
};

static const struct field f_kind[] = {
    {"group", X_STRING, S_GROUP}, {"kind", X_STRING, S_RKIND}, {NULL}};
static const struct field f_resource[] = {{"resource", X_STRING, S_RESOURCE}, {NULL}};
static const struct field f_request[] = {{"uid", X_STRING, S_UID},
                                         {"kind", X_OBJECT, S_NONE, f_kind},
                                         {"resource", X_OBJECT, S_NONE, f_resource},
                                         {"subResource", X_STRING, S_SUB},
                                         {"namespace", X_STRING, S_NS},
                                         {"name", X_STRING, S_NAME},
                                         {"operation", X_STRING, S_OP},
                                         {"dryRun", X_DRY_RUN},
                                         {"object", X_POD},
                                         {NULL}};
static const struct field f_review[] = {{"apiVersion", X_STRING, S_API},
                                        {"kind", X_STRING, S_KIND},
                                        {"request", X_REQUEST, S_NONE, f_request},
                                        {NULL}};

struct rd {
    struct k8s_jpull *p;
    struct k8s_jpool pool; /* the strings of the slots (rv->pool) */
    const char *s[S_N];    /* NULL unless the member is a string */
    bool is_object, has_request, dry_run;
    struct wh_pod *pod;
};

/* Forget what an earlier occurrence of the members of f gave: of
 * duplicate members the last counts. */
static void forget(struct rd *r, const struct field *f)
{
    for (; f->key; f++) {
        if (f->x == X_STRING)
            r->s[f->slot] = NULL;
        else if (f->fields)
            forget(r, f->fields);
        r->has_request &= f->x != X_REQUEST;
        r->dry_run &= f->x != X_DRY_RUN;
        if (f->x == X_POD)
            wh_pod_done(r->pod);
    }
}

static int string(struct rd *r, enum slot slot)
{
    return k8s_jpull_keep(r->p, &r->pool, &r->s[slot], NULL) < 0 ? -1 : 0;
}

static int walk(struct rd *r, const struct field *f);

/* The object member: its metadata and spec, or no pod when not an object. */
static int pod(struct rd *r)
{
    wh_pod_done(r->pod);
    enum k8s_jtype t = k8s_jpull_peek(r->p);
    r->pod->shape = t == K8S_J_OBJECT ? WH_SHAPE_LIST
                    : t == K8S_J_NULL ? WH_SHAPE_NULL
                                      : WH_SHAPE_OTHER;
    if (t != K8S_J_OBJECT)
        return k8s_jpull_skip(r->p);
    int st = 0, rc;
    const char *k;
    size_t n;
    while ((rc = k8s_jpull_member(r->p, &st, &k, &n)) > 0) {
        int v = k8s_jkey_is(k, n, "metadata") ? wh_meta_pull(r->p, &r->pod->meta)
                : k8s_jkey_is(k, n, "spec")   ? wh_podspec_pull(r->p, &r->pod->spec)
                                              : k8s_jpull_skip(r->p);
        if (v < 0)
            return -1;
    }
    return rc;
}

static int member(struct rd *r, const struct field *e)
{
    switch (e->x) {
    case X_STRING:
        return string(r, e->slot);
    case X_DRY_RUN: {
        int t = k8s_jpull_true(r->p);
        r->dry_run = t > 0;
        return t < 0 ? -1 : 0;
    }
    case X_POD:
        return pod(r);
    case X_REQUEST:
        forget(r, e->fields);
        r->has_request = k8s_jpull_peek(r->p) == K8S_J_OBJECT;
        return walk(r, e->fields);
    case X_OBJECT:
        forget(r, e->fields);
        return walk(r, e->fields);
    }
    return k8s_jpull_skip(r->p);
}

/* The members of f in the object at the cursor (anything else: skipped). */
static int walk(struct rd *r, const struct field *f)
{
    if (k8s_jpull_peek(r->p) != K8S_J_OBJECT)
        return k8s_jpull_skip(r->p);
    int st = 0, rc;
    const char *k;
    size_t n;
    while ((rc = k8s_jpull_member(r->p, &st, &k, &n)) > 0) {
        const struct field *e = f;
        while (e->key && !k8s_jkey_is(k, n, e->key))
            e++;
        if ((e->key ? member(r, e) : k8s_jpull_skip(r->p)) < 0)
            return -1;
    }
    return rc;
}

static int review_pull(struct k8s_jpull *p, void *arg)
{
    struct rd *r = arg;
    r->p = p;
    enum k8s_jtype t = k8s_jpull_peek(p);
    r->is_object = t == K8S_J_OBJECT;
    if (t != K8S_J_OBJECT && t != K8S_J_ARRAY) /* a JSON text, as jansson reads one */
        return k8s_jpull_fail(p, "'[' or '{' expected");
    return walk(r, f_review);
}

static int check_envelope(const struct rd *r, enum wh_review_version *ver, struct k8s_error *reterr)
{
    if (!r->is_object)
        return k8s_error_set(reterr, -K8S_EINVAL, "not an AdmissionReview: body is not an object");
    const char *api = r->s[S_API], *kind = r->s[S_KIND];
    if (!api || (strcmp(api, GROUP "v1") && strcmp(api, GROUP "v1beta1")))
        return k8s_error_set(
            reterr, -K8S_EINVAL,
            "not an AdmissionReview: apiVersion \"%.60s\" is not %sv1 or %sv1beta1", api ? api : "",
            GROUP, GROUP);
    if (!kind || strcmp(kind, "AdmissionReview"))
        return k8s_error_set(reterr, -K8S_EINVAL, "not an AdmissionReview: kind is \"%.60s\"",
                             kind ? kind : "");
    *ver = strcmp(api, GROUP "v1") ? WH_REVIEW_V1BETA1 : WH_REVIEW_V1;
    if (!r->has_request)
        return k8s_error_set(reterr, -K8S_EINVAL, "AdmissionReview has no request object");
    if (!r->s[S_UID] || !*r->s[S_UID])
        return k8s_error_set(reterr, -K8S_EINVAL, "AdmissionReview request has no uid");
    return 0;
}

static bool is_pod_create(const char *const *s)
{
    const char *group = s[S_GROUP], *k = s[S_RKIND], *resource = s[S_RESOURCE], *sub = s[S_SUB];
    const char *op = s[S_OP];
    return k && !strcmp(k, "Pod") && (!group || !*group) &&
           (!resource || !strcmp(resource, "pods")) && (!sub || !*sub) && op &&
           !strcmp(op, "CREATE");
}

static void describe(struct wh_review *rv, const char *const *s)
{
    const char *name = s[S_NAME], *gen = rv->pod.meta.generate_name, *kind = s[S_RKIND];
    if (!name || !*name)
        name = rv->pod.meta.name;
    bool named = name && *name;
    k8s_strjoin(rv->what, sizeof(rv->what), kind ? kind : "?", " ", rv->ns, "/",
                named ? name
                : gen ? gen
                      : "",
                named ? "" : "*", NULL);
}

int wh_review_decode(const char *body, size_t len, struct k8s_arena *arena, struct wh_review *ret,
                     struct k8s_error *reterr)
{
    struct wh_review rv = {.pool = k8s_arena_malloc(arena, len + 1), .arena = arena};
    rv.pod.meta.arena = rv.pod.spec.arena = arena;
    struct rd r = {.pool = {rv.pool}, .pod = &rv.pod};
    if (!rv.pool)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    int rc = k8s_json_pull_text(body, len, review_pull, &r, reterr);
    if (rc < 0)
        k8s_error_prefix(reterr, "request body is not valid JSON");
    else
        rc = check_envelope(&r, &rv.version, reterr);
    if (rc < 0) {
        wh_review_done(&rv);
        return rc;
    }
    rv.uid = r.s[S_UID];
    rv.ns = r.s[S_NS] && *r.s[S_NS] ? r.s[S_NS] : rv.pod.meta.ns ? rv.pod.meta.ns : "";
    rv.operation = r.s[S_OP] ? r.s[S_OP] : "";
    rv.pod_create = is_pod_create(r.s);
    rv.dry_run = r.dry_run;
    describe(&rv, r.s);
    *ret = rv;
    return 0;
}

void wh_review_done(struct wh_review *rv)
{
    if (!rv)
        return;
    wh_pod_done(&rv->pod);
    k8s_arena_release(rv->arena, rv->pool);
    rv->pool = NULL;
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
