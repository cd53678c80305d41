/* k8s_store: the cache map, its transform (client-go's SetTransform),
 * relists staged page by page and the differences a relist reports. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "k8s_store.h"

static json_t *obj(const char *ns, const char *name, const char *extra)
{
    return json_pack("{s:{s:s, s:s}, s:s}", "metadata", "namespace", ns, "name", name, "spec",
                     extra);
}

/* keeps only the spec string; drops objects whose spec is "drop" */
static json_t *only_spec(json_t *o)
{
    const char *v = json_string_value(json_object_get(o, "spec"));
    return v && strcmp(v, "drop") ? json_string(v) : NULL;
}

Test(k8s_store, put_get_remove)
{
    struct k8s_store *s = k8s_store_new();
    k8s_store_put_new(s, obj("ml", "a", "1"));
    k8s_store_put_new(s, obj("ml", "a", "2")); /* replaces */
    json_t *got = k8s_store_get(s, "ml", "a");
    cr_assert_str_eq(json_string_value(json_object_get(got, "spec")), "2");
    json_decref(got);
    cr_assert_eq(k8s_store_size(s), 1);
    json_t *gone = obj("ml", "a", "");
    k8s_store_remove(s, gone);
    json_decref(gone);
    cr_assert_null(k8s_store_get(s, "ml", "a"));
    k8s_store_free(s);
}

Test(k8s_store, transform_applies_to_every_way_in)
{
    struct k8s_store *s = k8s_store_new();
    k8s_store_set_transform(s, only_spec);
    k8s_store_put_new(s, obj("ml", "a", "kept-a"));
    json_t *got = k8s_store_get(s, "ml", "a");
    cr_assert_str_eq(json_string_value(got), "kept-a", "readers see the transformed form");
    json_decref(got);
    k8s_store_put_new(s, obj("ml", "a", "drop"));
    cr_assert_null(k8s_store_get(s, "ml", "a"), "a NULL transform drops the object");
    got = k8s_store_put_if_absent_new(s, obj("ml", "b", "kept-b"));
    cr_assert_str_eq(json_string_value(got), "kept-b");
    json_decref(got);
    json_t *items = json_pack("[o, o, o]", obj("ml", "c", "kept-c"), obj("ml", "d", "drop"),
                              obj("ml", "e", "kept-e"));
    k8s_store_replace_new(s, items);
    cr_assert_eq(k8s_store_size(s), 2, "the relist replaced everything; d was dropped");
    got = k8s_store_get(s, "ml", "e");
    cr_assert_str_eq(json_string_value(got), "kept-e");
    json_decref(got);
    k8s_store_free(s);
}

Test(k8s_store, staged_relist_keeps_the_old_content_until_done)
{
    struct k8s_store *s = k8s_store_new();
    k8s_store_set_transform(s, only_spec);
    k8s_store_put_new(s, obj("ml", "old", "x"));
    json_t *staging = json_object();
    for (int page = 0; page < 3; page++) {
        char name[8];
        snprintf(name, sizeof(name), "p%d", page);
        json_t *o = obj("ml", name, name);
        k8s_store_stage(s, staging, o);
        json_decref(o); /* the page can go: only the kept form is staged */
        cr_assert_eq(k8s_store_size(s), 1, "readers still see the old content");
    }
    k8s_store_replace_staged(s, staging);
    cr_assert_eq(k8s_store_size(s), 3);
    cr_assert_null(k8s_store_get(s, "ml", "old"));
    k8s_store_replace_staged(s, NULL); /* allocation failure: keep what we have */
    cr_assert_eq(k8s_store_size(s), 3);
    k8s_store_free(s);
}

struct diffs {
    char log[8][64];
    int n;
};

static void record(void *ud, const char *key, const json_t *before, const json_t *after)
{
    struct diffs *d = ud;
    const char *what = !after ? "removed" : before ? "changed" : "added";
    const json_t *form = after ? after : before;
    cr_assert_lt(d->n, 8);
    snprintf(d->log[d->n++], sizeof(d->log[0]), "%s %s %s", what, key, json_string_value(form));
}

static bool logged(const struct diffs *d, const char *line)
{
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->log[i], line))
            return true;
    return false;
}

Test(k8s_store, a_relist_reports_every_difference_in_the_stored_form)
{
    struct k8s_store *s = k8s_store_new();
    k8s_store_set_transform(s, only_spec);
    k8s_store_put_new(s, obj("ml", "same", "1"));
    k8s_store_put_new(s, obj("ml", "changed", "1"));
    k8s_store_put_new(s, obj("ml", "gone", "1"));
    json_t *staging = json_object();
    json_t *o[] = {obj("ml", "same", "1"), obj("ml", "changed", "2"), obj("ml", "new", "1"),
                   obj("ml", "dropped", "drop")};
    for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++) {
        k8s_store_stage(s, staging, o[i]);
        json_decref(o[i]);
    }
    struct diffs d = {0};
    k8s_store_replace_diff(s, staging, record, &d);
    cr_assert_eq(d.n, 3, "unchanged and untransformed objects are no difference");
    cr_assert(logged(&d, "changed ml/changed 2"), "the new form");
    cr_assert(logged(&d, "added ml/new 1"));
    cr_assert(logged(&d, "removed ml/gone 1"), "the form that was stored");
    cr_assert_eq(k8s_store_size(s), 3);
    d.n = 0;
    k8s_store_replace_diff(s, json_object(), record, &d);
    cr_assert_eq(d.n, 3, "emptied: everything removed");
    cr_assert_eq(k8s_store_size(s), 0);
    k8s_store_replace_diff(s, NULL, record, &d); /* allocation failure: nothing changes */
    cr_assert_eq(d.n, 3);
    k8s_store_free(s);
}

/* Readers that hold objects while the writer replaces and relists them:
 * whichever thread drops the last reference frees what the others read.
 * Under ThreadSanitizer this fails when that drop is json_decref's
 * release-only decrement (the race of the operator's reconcile workers and
 * a pod watch reading the same capture); k8s_store_release orders it. */
struct churn {
    struct k8s_store *s;
    int stop;
    long reads;
};

static void *reader(void *arg)
{
    struct churn *c = arg;
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        json_t *o = k8s_store_get(c->s, "ml", "a");
        const char *v = json_string_value(json_object_get(o, "spec"));
        if (v && strlen(v) > 0)
            __atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
        k8s_store_release(o);
    }
    return NULL;
}

Test(k8s_store, readers_may_drop_the_last_reference)
{
    struct churn c = {.s = k8s_store_new()};
    pthread_t t[2];
    k8s_store_put_new(c.s, obj("ml", "a", "v0"));
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, reader, &c), 0);
    /* at least 2,000 writes, and on until the readers have read 1,000 times
     * (they may start late on a busy machine); bounded */
    for (int i = 0; i < 2000 || (__atomic_load_n(&c.reads, __ATOMIC_RELAXED) < 1000 && i < 5000000);
         i++) {
        char v[16];
        snprintf(v, sizeof(v), "v%d", i);
        if (i % 10 == 9) { /* a relist replaces the whole map */
            json_t *items = json_pack("[o]", obj("ml", "a", v));
            k8s_store_replace_new(c.s, items);
        } else {
            k8s_store_put_new(c.s, obj("ml", "a", v));
        }
    }
    __atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_geq(c.reads, 1000);
    k8s_store_free(c.s);
}
