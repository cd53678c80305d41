#include "k8s_store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 512

#if !JSON_HAVE_ATOMIC_BUILTINS
#error "k8s_store shares objects between threads: it needs jansson's atomic reference counts"
#endif

struct k8s_store {
    pthread_rwlock_t lock;
    json_t *map; /* key → object (as transformed) */
    k8s_store_transform_fn transform;
};

void k8s_store_release(json_t *obj)
{
    if (!obj || __atomic_load_n(&obj->refcount, __ATOMIC_RELAXED) == (size_t)-1)
        return; /* NULL, or one of jansson's immortal values */
    if (__atomic_sub_fetch(&obj->refcount, 1, __ATOMIC_ACQ_REL) == 0)
        json_delete(obj);
}

/* A map swapped out of the store: each value through k8s_store_release,
 * as readers may still hold it (the map itself was never lent). */
static void drop_map(json_t *map)
{
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(map, tmp, key, v)
    {
        json_incref(v);
        json_object_del(map, key);
        k8s_store_release(v);
    }
    json_decref(map);
}

void k8s_store_set_transform(struct k8s_store *s, k8s_store_transform_fn fn)
{
    s->transform = fn;
}

/* What to keep of obj (a new reference; NULL: nothing). */
static json_t *kept(const struct k8s_store *s, json_t *obj)
{
    return s->transform ? s->transform(obj) : json_incref(obj);
}

void k8s_store_stage(struct k8s_store *s, json_t *staging, json_t *obj)
{
    char key[KEY_MAX];
    if (!k8s_store_key(obj, key, sizeof(key)))
        return;
    json_t *keep = kept(s, obj);
    if (keep)
        json_object_set_new(staging, key, keep);
}

void k8s_store_replace_staged(struct k8s_store *s, json_t *staging)
{
    k8s_store_replace_diff(s, staging, NULL, NULL);
}

/* What a relist changed: key → the form after (added or changed), key →
 * the form before (removed or changed). */
struct diff {
    json_t *now, *was;
};

/* old is private (swapped out); the content is read under the lock. */
static void collect(struct k8s_store *s, json_t *old, struct diff *d)
{
    const char *key;
    json_t *v;
    pthread_rwlock_rdlock(&s->lock);
    json_object_foreach(s->map, key, v)
    {
        json_t *prev = json_object_get(old, key);
        if (prev && json_equal(prev, v))
            continue;
        json_object_set(d->now, key, v);
        if (prev)
            json_object_set(d->was, key, prev);
    }
    json_object_foreach(old, key, v) if (!json_object_get(s->map, key))
        json_object_set(d->was, key, v);
    pthread_rwlock_unlock(&s->lock);
}

static void report_diff(const struct diff *d, k8s_store_diff_fn fn, void *ud)
{
    const char *key;
    json_t *v;
    json_object_foreach(d->now, key, v) fn(ud, key, json_object_get(d->was, key), v);
    json_object_foreach(d->was, key, v) if (!json_object_get(d->now, key)) fn(ud, key, v, NULL);
}

void k8s_store_replace_diff(struct k8s_store *s, json_t *staging, k8s_store_diff_fn fn, void *ud)
{
    if (!staging)
        return; /* out of memory: keep what we had */
    pthread_rwlock_wrlock(&s->lock);
    json_t *old = s->map;
    s->map = staging;
    pthread_rwlock_unlock(&s->lock);
    if (fn) {
        struct diff d = {json_object(), json_object()};
        if (d.now && d.was)
            collect(s, old, &d);
        drop_map(old); /* what was removed lives on in d.was */
        report_diff(&d, fn, ud);
        drop_map(d.now);
        drop_map(d.was);
        return;
    }
    drop_map(old); /* outside the lock: readers hold their own references */
}

struct k8s_store *k8s_store_new(void)
{
    struct k8s_store *s = calloc(1, sizeof(*s));
    if (!s || !(s->map = json_object())) {
        free(s);
        return NULL;
    }
    pthread_rwlock_init(&s->lock, NULL);
    return s;
}

void k8s_store_free(struct k8s_store *s)
{
    if (!s)
        return;
    drop_map(s->map);
    pthread_rwlock_destroy(&s->lock);
    free(s);
}

bool k8s_store_key(const json_t *obj, char *out, size_t cap)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name || !*name)
        return false;
    int n = ns && *ns ? snprintf(out, cap, "%s/%s", ns, name) : snprintf(out, cap, "%s", name);
    return n > 0 && (size_t)n < cap;
}

void k8s_store_replace_new(struct k8s_store *s, json_t *items)
{
    json_t *staging = json_object();
    size_t i;
    json_t *obj;
    json_array_foreach(items, i, obj) if (staging) k8s_store_stage(s, staging, obj);
    json_decref(items);
    k8s_store_replace_staged(s, staging);
}

void k8s_store_put_new(struct k8s_store *s, json_t *obj)
{
    char key[KEY_MAX];
    if (!k8s_store_key(obj, key, sizeof(key))) {
        json_decref(obj);
        return;
    }
    json_t *keep = kept(s, obj);
    json_decref(obj);
    pthread_rwlock_wrlock(&s->lock);
    json_t *old = json_incref(json_object_get(s->map, key));
    if (keep)
        json_object_set_new(s->map, key, keep);
    else
        json_object_del(s->map, key);
    pthread_rwlock_unlock(&s->lock);
    k8s_store_release(old);
}

json_t *k8s_store_put_if_absent_new(struct k8s_store *s, json_t *obj)
{
    char key[KEY_MAX];
    if (!k8s_store_key(obj, key, sizeof(key)))
        return obj; /* unnamed: nothing to cache, hand it back */
    pthread_rwlock_wrlock(&s->lock);
    json_t *have = json_object_get(s->map, key);
    if (!have && (have = kept(s, obj)))
        json_object_set_new(s->map, key, have);
    json_incref(have);
    pthread_rwlock_unlock(&s->lock);
    json_decref(obj);
    return have;
}

void k8s_store_remove(struct k8s_store *s, const json_t *obj)
{
    char key[KEY_MAX];
    if (!k8s_store_key(obj, key, sizeof(key)))
        return;
    pthread_rwlock_wrlock(&s->lock);
    json_t *old = json_incref(json_object_get(s->map, key));
    json_object_del(s->map, key);
    pthread_rwlock_unlock(&s->lock);
    k8s_store_release(old);
}

json_t *k8s_store_get(struct k8s_store *s, const char *ns, const char *name)
{
    char key[KEY_MAX];
    int n = ns && *ns ? snprintf(key, sizeof(key), "%s/%s", ns, name)
                      : snprintf(key, sizeof(key), "%s", name);
    if (n <= 0 || (size_t)n >= sizeof(key))
        return NULL;
    pthread_rwlock_rdlock(&s->lock);
    json_t *obj = json_incref(json_object_get(s->map, key));
    pthread_rwlock_unlock(&s->lock);
    return obj;
}

size_t k8s_store_size(struct k8s_store *s)
{
    pthread_rwlock_rdlock(&s->lock);
    size_t n = json_object_size(s->map);
    pthread_rwlock_unlock(&s->lock);
    return n;
}

void k8s_store_each(struct k8s_store *s, k8s_store_each_fn fn, void *ud)
{
    const char *key;
    json_t *obj;
    pthread_rwlock_rdlock(&s->lock);
    json_object_foreach(s->map, key, obj) fn(ud, key, obj);
    pthread_rwlock_unlock(&s->lock);
}
