/* wh_review: AdmissionReview decoding (errors, versions, pod CREATE
 * detection, what is kept) and the response document. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_arena.h"
#include "k8s_codec.h"
#include "wh_review.h"
#include "test_support.h"

#define BASE "unit/review/pod-create-v1.json"
#define UID  "705ab4f5-6393-11e8-b7cc-42010a800002"

static int decode_str(const char *body, struct wh_review *rv, struct k8s_error *err)
{
    return wh_review_decode(body, strlen(body), NULL, rv, err);
}

/* Decode the base review after `edit` changed it. */
static int decode_json(json_t *doc, struct wh_review *rv, struct k8s_error *err)
{
    char *body = json_dumps(doc, JSON_COMPACT);
    int r = wh_review_decode(body, strlen(body), NULL, rv, err);
    free(body);
    return r;
}

static json_t *base(void)
{
    return ts_load_json(BASE);
}

static json_t *req(json_t *doc)
{
    return json_object_get(doc, "request");
}

struct bad {
    const char *body;
    int err;
    const char *msg;
};

Test(wh_review, decode_errors_with_messages)
{
    static const struct bad cases[] = {
        {"[]", -K8S_EINVAL, "not an AdmissionReview: body is not an object"},
        {"{}", -K8S_EINVAL,
         "not an AdmissionReview: apiVersion \"\" is not admission.k8s.io/v1 or "
         "admission.k8s.io/v1beta1"},
        {"{\"apiVersion\":\"admission.k8s.io/v2\",\"kind\":\"AdmissionReview\"}", -K8S_EINVAL,
         "not an AdmissionReview: apiVersion \"admission.k8s.io/v2\" is not admission.k8s.io/v1 "
         "or admission.k8s.io/v1beta1"},
        {"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}", -K8S_EINVAL,
         "not an AdmissionReview: apiVersion \"v1\" is not admission.k8s.io/v1 or "
         "admission.k8s.io/v1beta1"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\"}", -K8S_EINVAL,
         "not an AdmissionReview: kind is \"Pod\""},
        {"{\"apiVersion\":\"admission.k8s.io/v1\"}", -K8S_EINVAL,
         "not an AdmissionReview: kind is \"\""},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", -K8S_EINVAL,
         "AdmissionReview has no request object"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":[]}",
         -K8S_EINVAL, "AdmissionReview has no request object"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
         -K8S_EINVAL, "AdmissionReview request has no uid"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
         "\"uid\":\"\"}}",
         -K8S_EINVAL, "AdmissionReview request has no uid"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
         "\"uid\":7}}",
         -K8S_EINVAL, "AdmissionReview request has no uid"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct wh_review rv = {.uid = "untouched"};
        struct k8s_error err = {0};
        cr_expect_eq(decode_str(cases[i].body, &rv, &err), cases[i].err, "%s", cases[i].body);
        cr_expect_str_eq(err.message, cases[i].msg, "%s", cases[i].body);
        cr_expect_str_eq(rv.uid, "untouched");
        cr_expect_null(rv.pool);
    }
}

Test(wh_review, decode_not_json)
{
    const char *bodies[] = {"",     "{",     "not json", "{\"a\":1}x", "{\"a\":\"\xff\"}",
                            "true", "\"x\"", "7"};
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        struct wh_review rv = {.uid = "untouched"};
        struct k8s_error err = {0};
        cr_expect_eq(decode_str(bodies[i], &rv, &err), -K8S_EPARSE, "\"%s\"", bodies[i]);
        cr_expect_eq(strncmp(err.message, "request body is not valid JSON: ", 32), 0, "%s",
                     err.message);
        cr_expect_null(strchr(err.message, '\n'), "one line");
        cr_expect_str_eq(rv.uid, "untouched");
    }
}

Test(wh_review, decode_pod_create_v1)
{
    json_t *doc = base();
    struct wh_review rv;
    struct k8s_error err = {0};
    cr_assert_eq(decode_json(doc, &rv, &err), 0, "%s", err.message);
    cr_expect_eq(rv.version, WH_REVIEW_V1);
    cr_expect_str_eq(rv.uid, UID);
    cr_expect_str_eq(rv.ns, "team-a");
    cr_expect_str_eq(rv.operation, "CREATE");
    cr_expect(rv.pod_create);
    cr_expect_not(rv.dry_run);
    cr_expect_str_eq(rv.what, "Pod team-a/train-workers-0-0-*");
    cr_expect_eq(rv.pod.shape, WH_SHAPE_LIST);
    wh_review_done(&rv);
    cr_expect_null(rv.pool);
    cr_expect_eq(rv.pod.shape, WH_SHAPE_ABSENT);
    wh_review_done(&rv);
    wh_review_done(NULL);
    json_decref(doc);
}

Test(wh_review, decode_keeps_only_what_mutation_reads)
{
    json_t *doc = base();
    struct wh_review rv;
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    /* the metadata, as wh_meta reads it: every label and annotation */
    json_t *meta = json_object_get(json_object_get(req(doc), "object"), "metadata");
    const struct wh_meta *m = &rv.pod.meta;
    cr_expect_eq(m->shape, WH_SHAPE_LIST);
    const char *maps[] = {"labels", "annotations"};
    const struct wh_map *got[] = {&m->labels, &m->annotations};
    for (size_t i = 0; i < 2; i++) {
        const json_t *want = json_object_get(meta, maps[i]);
        cr_assert_gt(json_object_size(want), 0);
        cr_expect_eq(got[i]->n, json_object_size(want), "%s", maps[i]);
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)want, k, v)
            cr_expect_str_eq(wh_map_get(got[i], k), json_string_value(v), "%s %s", maps[i], k);
    }
    const json_t *owner = json_array_get(json_object_get(meta, "ownerReferences"), 0);
    cr_expect_str_eq(m->owner_kind, json_string_value(json_object_get(owner, "kind")));
    cr_expect_str_eq(m->owner_name, json_string_value(json_object_get(owner, "name")));
    cr_expect_str_eq(m->generate_name, "train-workers-0-0-");
    /* the spec, as wh_podspec reads it */
    const struct wh_container *c = &rv.pod.spec.list[WH_CONTAINERS].c[0];
    cr_assert_eq(rv.pod.spec.list[WH_CONTAINERS].n, 1);
    cr_expect_str_eq(c->name, "main");
    cr_expect_eq(c->env_shape, WH_SHAPE_LIST);
    cr_expect_eq(c->mounts_shape, WH_SHAPE_LIST);
    cr_assert_eq(rv.pod.spec.list[WH_INIT_CONTAINERS].n, 1);
    cr_expect_str_eq(rv.pod.spec.list[WH_INIT_CONTAINERS].c[0].restart_policy, "Always");
    cr_assert_geq(rv.pod.spec.n_volumes, 1);
    cr_expect_str_eq(rv.pod.spec.volumes[0], "data");
    /* every env entry, as the tree holds it */
    const json_t *want_env = json_object_get(
        json_array_get(json_object_get(json_object_get(json_object_get(req(doc), "object"), "spec"),
                                       "containers"),
                       0),
        "env");
    cr_assert_eq(c->n_env, json_array_size(want_env));
    for (size_t i = 0; i < c->n_env; i++) {
        const json_t *e = json_array_get(want_env, i);
        cr_expect_str_eq(c->env[i].name, json_string_value(json_object_get(e, "name")));
        if (json_object_get(e, "value"))
            cr_expect_str_eq(c->env[i].value, json_string_value(json_object_get(e, "value")));
        cr_expect_eq(c->env[i].value_from, json_object_get(e, "valueFrom") != NULL);
    }
    wh_review_done(&rv);
    json_decref(doc);
}

Test(wh_review, the_last_spec_counts_and_an_object_without_one_has_none)
{
    const char *env = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"Pod\"},"
                      "\"operation\":\"CREATE\",";
    char body[512];
    struct wh_review rv;
    snprintf(body, sizeof(body),
             "%s\"object\":{\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
             "\"spec\":{\"containers\":[{\"name\":\"b\"}]}}}}",
             env);
    cr_assert_eq(decode_str(body, &rv, NULL), 0);
    cr_assert_eq(rv.pod.spec.list[WH_CONTAINERS].n, 1);
    cr_expect_str_eq(rv.pod.spec.list[WH_CONTAINERS].c[0].name, "b");
    wh_review_done(&rv);
    snprintf(body, sizeof(body),
             "%s\"object\":{\"spec\":{\"containers\":[]}},"
             "\"object\":{\"metadata\":{}}}}",
             env);
    cr_assert_eq(decode_str(body, &rv, NULL), 0);
    cr_expect_eq(rv.pod.spec.shape, WH_SHAPE_ABSENT, "the first object's spec is not the pod's");
    wh_review_done(&rv);
    snprintf(body, sizeof(body),
             "%s\"object\":{\"spec\":{\"containers\":[]}},\"object\":\"none\"}}", env);
    cr_assert_eq(decode_str(body, &rv, NULL), 0);
    cr_expect_eq(rv.pod.spec.shape, WH_SHAPE_ABSENT, "an object that is no object has no spec");
    wh_review_done(&rv);
}

Test(wh_review, decode_v1beta1)
{
    json_t *doc = base();
    json_object_set_new(doc, "apiVersion", json_string("admission.k8s.io/v1beta1"));
    struct wh_review rv;
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect_eq(rv.version, WH_REVIEW_V1BETA1);
    cr_expect(rv.pod_create);
    char *out = wh_review_respond(&rv, NULL, NULL, NULL);
    cr_expect_str_eq(out,
                     "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":"
                     "\"AdmissionReview\",\"response\":{\"uid\":\"" UID "\",\"allowed\":true}}");
    free(out);
    wh_review_done(&rv);
    json_decref(doc);
}

Test(wh_review, pod_create_detection)
{
    struct {
        const char *what;
        const char *path, *key;
        json_t *value;
        bool want;
    } cases[] = {
        {"subresource", NULL, "subResource", json_string("binding"), false},
        {"empty subresource", NULL, "subResource", json_string(""), true},
        {"UPDATE", NULL, "operation", json_string("UPDATE"), false},
        {"DELETE", NULL, "operation", json_string("DELETE"), false},
        {"no operation", NULL, "operation", json_null(), false},
        {"Deployment", "kind", "kind", json_string("Deployment"), false},
        {"group apps", "kind", "group", json_string("apps"), false},
        {"resource deployments", "resource", "resource", json_string("deployments"), false},
        {"no group", "kind", "group", json_null(), true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *doc = base();
        json_t *target = cases[i].path ? json_object_get(req(doc), cases[i].path) : req(doc);
        if (json_is_null(cases[i].value)) {
            json_object_del(target, cases[i].key);
            json_decref(cases[i].value);
        } else {
            json_object_set_new(target, cases[i].key, cases[i].value);
        }
        struct wh_review rv;
        struct k8s_error err = {0};
        cr_assert_eq(decode_json(doc, &rv, &err), 0, "%s: %s", cases[i].what, err.message);
        cr_expect_eq(rv.pod_create, cases[i].want, "%s", cases[i].what);
        wh_review_done(&rv);
        json_decref(doc);
    }
}

Test(wh_review, operation_absent_is_empty)
{
    json_t *doc = base();
    json_object_del(req(doc), "operation");
    struct wh_review rv;
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect_str_eq(rv.operation, "");
    wh_review_done(&rv);
    json_decref(doc);
}

Test(wh_review, dry_run)
{
    json_t *doc = base();
    json_object_set_new(req(doc), "dryRun", json_true());
    struct wh_review rv;
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect(rv.dry_run);
    wh_review_done(&rv);
    json_decref(doc);
}

Test(wh_review, namespace_fallbacks)
{
    json_t *doc = base();
    json_object_del(req(doc), "namespace");
    json_object_set_new(json_object_get(json_object_get(req(doc), "object"), "metadata"),
                        "namespace", json_string("from-object"));
    struct wh_review rv;
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect_str_eq(rv.ns, "from-object");
    cr_expect_str_eq(rv.what, "Pod from-object/train-workers-0-0-*");
    wh_review_done(&rv);
    json_object_del(json_object_get(json_object_get(req(doc), "object"), "metadata"), "namespace");
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect_str_eq(rv.ns, "");
    wh_review_done(&rv);
    json_decref(doc);
}

Test(wh_review, what_text)
{
    json_t *doc = base();
    json_t *meta = json_object_get(json_object_get(req(doc), "object"), "metadata");
    json_object_set_new(meta, "name", json_string("train-abc"));
    struct wh_review rv;
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect_str_eq(rv.what, "Pod team-a/train-abc");
    wh_review_done(&rv);
    json_object_set_new(req(doc), "name", json_string("from-request"));
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect_str_eq(rv.what, "Pod team-a/from-request");
    wh_review_done(&rv);
    json_object_del(req(doc), "name");
    json_object_del(meta, "name");
    json_object_del(meta, "generateName");
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect_str_eq(rv.what, "Pod team-a/*");
    wh_review_done(&rv);
    json_object_del(req(doc), "object");
    json_object_set_new(json_object_get(req(doc), "kind"), "kind", json_string("Deployment"));
    json_object_set_new(req(doc), "name", json_string("web"));
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect_str_eq(rv.what, "Deployment team-a/web");
    cr_expect_eq(rv.pod.shape, WH_SHAPE_ABSENT);
    wh_review_done(&rv);
    json_decref(doc);
}

static struct wh_review decoded(void)
{
    json_t *doc = base();
    struct wh_review rv;
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    json_decref(doc);
    return rv;
}

Test(wh_review, respond_no_patch)
{
    struct wh_review rv = decoded();
    const char *want = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                       "\"response\":{\"uid\":\"" UID "\",\"allowed\":true}}";
    size_t len = 0;
    char *out = wh_review_respond(&rv, NULL, NULL, &len);
    cr_expect_str_eq(out, want);
    cr_expect_eq(len, strlen(want));
    free(out);
    json_t *empty = json_array(), *nowarn = json_array();
    out = wh_review_respond(&rv, empty, nowarn, NULL);
    cr_expect_str_eq(out, want, "empty patch and warnings are left out");
    free(out);
    json_decref(empty);
    json_decref(nowarn);
    wh_review_done(&rv);
}

Test(wh_review, respond_patch_base64_of_compact_patch)
{
    struct wh_review rv = decoded();
    json_t *patch =
        json_pack("[{s:s,s:s,s:s}]", "op", "add", "path",
                  "/metadata/annotations/diagon.gke.io~1injection", "value", "0.1.0;abc");
    char *out = wh_review_respond(&rv, patch, NULL, NULL);
    cr_expect_str_eq(out, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                          "\"response\":{\"uid\":\"" UID "\",\"allowed\":true,"
                          "\"patchType\":\"JSONPatch\",\"patch\":\"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21l"
                          "dGFkYXRhL2Fubm90YXRpb25zL2RpYWdvbi5na2UuaW9+MWluamVjdGlvbiIsInZhbHVlIjoi"
                          "MC4xLjA7YWJjIn1d\"}}");
    free(out);
    json_decref(patch);
    wh_review_done(&rv);
}

Test(wh_review, respond_patch_round_trips)
{
    struct wh_review rv = decoded();
    json_t *patch = ts_load_json("unit/review/patch.json");
    json_t *warn = json_pack("[s,s]", "cluster name unknown", "w\"2\xc3\xa9");
    char *out = wh_review_respond(&rv, patch, warn, NULL);
    json_error_t e;
    json_t *resp = json_loads(out, 0, &e);
    cr_assert_not_null(resp, "%s: %s", e.text, out);
    json_t *r = json_object_get(resp, "response");
    cr_expect_str_eq(json_string_value(json_object_get(r, "patchType")), "JSONPatch");
    cr_expect(json_is_true(json_object_get(r, "allowed")));
    const char *b64 = json_string_value(json_object_get(r, "patch"));
    size_t n = 0;
    unsigned char *raw = k8s_base64_decode(b64, strlen(b64), &n);
    cr_assert_not_null(raw);
    json_t *back = json_loadb((char *)raw, n, 0, &e);
    cr_assert_not_null(back, "%s", e.text);
    cr_expect(json_equal(back, patch));
    char *compact = json_dumps(patch, JSON_COMPACT);
    cr_expect_eq(n, strlen(compact), "the compact form");
    cr_expect_eq(memcmp(raw, compact, n), 0);
    free(compact);
    cr_expect(json_equal(json_object_get(r, "warnings"), warn));
    /* key order of the envelope */
    const char *p = strstr(out, "\"uid\""), *q = strstr(out, "\"allowed\""),
               *s = strstr(out, "\"patchType\""), *t = strstr(out, "\"warnings\"");
    cr_expect(p && q && s && t && p < q && q < s && s < t, "%s", out);
    json_decref(back);
    free(raw);
    json_decref(resp);
    free(out);
    json_decref(warn);
    json_decref(patch);
    wh_review_done(&rv);
}

Test(wh_review, respond_warnings_without_patch)
{
    struct wh_review rv = decoded();
    json_t *warn = json_pack("[s]", "mldiagnostics: not injected: spec is missing");
    char *out = wh_review_respond(&rv, NULL, warn, NULL);
    cr_expect_str_eq(out, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                          "\"response\":{\"uid\":\"" UID "\",\"allowed\":true,\"warnings\":["
                          "\"mldiagnostics: not injected: spec is missing\"]}}");
    free(out);
    json_decref(warn);
    wh_review_done(&rv);
}

Test(wh_review, uid_escaped)
{
    json_t *doc = base();
    const char *uid = "a\"b\\c/\xc3\xa9\x01\t\xe2\x80\xa8";
    json_object_set_new(req(doc), "uid", json_string(uid));
    struct wh_review rv;
    cr_assert_eq(decode_json(doc, &rv, NULL), 0);
    cr_expect_str_eq(rv.uid, uid);
    char *out = wh_review_respond(&rv, NULL, NULL, NULL);
    json_error_t e;
    json_t *resp = json_loads(out, 0, &e);
    cr_assert_not_null(resp, "%s: %s", e.text, out);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(resp, "response"), "uid")),
                     uid);
    json_decref(resp);
    free(out);
    wh_review_done(&rv);
    json_decref(doc);
}

Test(wh_review, uid_unicode_escapes_in_body)
{
    const char *body = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                       "\"request\":{\"uid\":\"\\u00e9\\ud83d\\ude00\\\"q\"}}";
    struct wh_review rv;
    struct k8s_error err = {0};
    cr_assert_eq(decode_str(body, &rv, &err), 0, "%s", err.message);
    cr_expect_str_eq(rv.uid, "\xc3\xa9\xf0\x9f\x98\x80\"q");
    cr_expect_not(rv.pod_create);
    cr_expect_eq(rv.pod.shape, WH_SHAPE_ABSENT);
    char *out = wh_review_respond(&rv, NULL, NULL, NULL);
    json_t *resp = json_loads(out, 0, NULL);
    cr_assert_not_null(resp, "%s", out);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(resp, "response"), "uid")),
                     "\xc3\xa9\xf0\x9f\x98\x80\"q");
    json_decref(resp);
    free(out);
    wh_review_done(&rv);
}

/* Decoded with the request's arena, the review's strings and the pod's
 * arrays are the arena's (none malloc'd), with the same content; done
 * releases nothing of them, the reset does. */
Test(wh_review, decoded_with_an_arena_takes_its_memory)
{
    json_t *doc = base();
    char *body = json_dumps(doc, JSON_COMPACT);
    struct k8s_arena *a = k8s_arena_new(1024);
    struct wh_review rv, plain;
    struct k8s_error err = {0};
    cr_assert_eq(wh_review_decode(body, strlen(body), a, &rv, &err), 0, "%s", err.message);
    cr_assert_eq(decode_json(doc, &plain, &err), 0);
    cr_expect(k8s_arena_owns(a, rv.pool));
    cr_expect(k8s_arena_owns(a, rv.pod.meta.pool));
    cr_expect(k8s_arena_owns(a, rv.pod.spec.pool));
    cr_expect(k8s_arena_owns(a, rv.pod.spec.list[WH_CONTAINERS].c));
    cr_expect_eq(rv.pod.spec.arena, a);
    cr_expect_str_eq(rv.uid, plain.uid);
    cr_expect_str_eq(rv.what, plain.what);
    cr_expect_eq(rv.pod.spec.list[WH_CONTAINERS].n, plain.pod.spec.list[WH_CONTAINERS].n);
    size_t used = k8s_arena_used(a);
    wh_review_done(&rv);
    cr_expect_eq(k8s_arena_used(a), used);
    wh_review_done(&plain);
    k8s_arena_reset(a);
    k8s_arena_free(a);
    free(body);
    json_decref(doc);
}
