#include "wh_meta.h"

#include <stdlib.h>
#include <string.h>

#include "k8s_arena.h"

/* ---------- maps ---------- */

static int cmp_kv(const void *a, const void *b)
{
    const struct wh_kv *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    /* equal keys: the one read later (higher in the pool) sorts last */
    return c ? c : (x->key > y->key) - (x->key < y->key);
}

/* Sort by key and keep the last of equal keys. */
static void sort_unique(struct wh_kv *kv, size_t *n)
{
    if (*n < 2)
        return;
    qsort(kv, *n, sizeof(*kv), cmp_kv);
    size_t out = 0;
    for (size_t i = 0; i < *n; i++) {
        if (out && !strcmp(kv[out - 1].key, kv[i].key))
            out--;
        kv[out++] = kv[i];
    }
    *n = out;
}

/* A long map is sorted once for binary search; a short one (the usual
 * labels and annotations) is searched from its end, so that of duplicate
 * keys the last counts, and costs no sort at all. */
#define SEARCHED_IN_ORDER 32

static void index_map(struct wh_map *m)
{
    if (m->n > SEARCHED_IN_ORDER) {
        sort_unique(m->kv, &m->n);
        m->sorted = true;
    }
}

const struct wh_kv *wh_map_find(const struct wh_map *m, const char *key)
{
    if (!m || !m->n)
        return NULL;
    if (!m->sorted) {
        size_t len = strlen(key);
        for (size_t i = m->n; i-- > 0;)
            if (m->kv[i].klen == len && !memcmp(m->kv[i].key, key, len))
                return &m->kv[i];
        return NULL;
    }
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key, m->kv[mid].key);
        if (!c)
            return &m->kv[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *wh_map_get(const struct wh_map *m, const char *key)
{
    const struct wh_kv *e = wh_map_find(m, key);
    return e ? e->val : NULL;
}

struct wh_kv *wh_map_ordered(const struct wh_map *m, size_t *ret_n)
{
    struct wh_kv *kv = calloc(m->n + 1, sizeof(*kv));
    if (!kv)
        return NULL;
    if (m->n) /* kv is NULL for an empty map */
        memcpy(kv, m->kv, m->n * sizeof(*kv));
    *ret_n = m->n;
    if (!m->sorted)
        sort_unique(kv, ret_n);
    return kv;
}

/* Release m's array (from arena; NULL: malloc'd). */
static void map_done(struct k8s_arena *arena, struct wh_map *m)
{
    k8s_arena_release(arena, m->kv);
    *m = (struct wh_map){0};
}

void wh_meta_done(struct wh_meta *m)
{
    if (!m)
        return;
    map_done(m->arena, &m->labels);
    map_done(m->arena, &m->annotations);
    k8s_arena_release(m->arena, m->pool);
    *m = (struct wh_meta){.arena = m->arena};
}

/* ---------- reading text ---------- */

struct rd {
    struct k8s_jpull *p;
    struct k8s_arena *arena; /* the maps' arrays and the strings' (m->arena) */
    struct k8s_jpool pool;   /* the decoded strings (m->pool) */
};

/* A string value kept, or NULL (any other value is skipped). */
static int string(struct rd *r, const char **out)
{
    return k8s_jpull_keep(r->p, &r->pool, out, NULL);
}

static enum wh_shape shape_at(struct k8s_jpull *p, enum k8s_jtype want)
{
    enum k8s_jtype t = k8s_jpull_peek(p);
    return t == want ? WH_SHAPE_LIST : t == K8S_J_NULL ? WH_SHAPE_NULL : WH_SHAPE_OTHER;
}

static int map_pull(struct rd *r, struct wh_map *m)
{
    map_done(r->arena, m); /* of duplicate members the last counts */
    if ((m->shape = shape_at(r->p, K8S_J_OBJECT)) != WH_SHAPE_LIST)
        return k8s_jpull_skip(r->p);
    int st = 0, rc;
    size_t cap = 0, kn;
    const char *k;
    while ((rc = k8s_jpull_member(r->p, &st, &k, &kn)) > 0) {
        if (m->n == cap) {
            size_t used = cap * sizeof(*m->kv);
            struct wh_kv *kv =
                k8s_arena_realloc(r->arena, m->kv, used, (cap = cap ? 2 * cap : 16) * sizeof(*kv));
            if (!kv)
                return k8s_jpull_fail(r->p, "out of memory");
            m->kv = kv;
        }
        struct wh_kv *e = &m->kv[m->n++];
        e->key = k8s_jpool_put(&r->pool, k, kn); /* the key's view ends with the next call */
        e->klen = kn;
        if (string(r, &e->val) < 0)
            return -1;
    }
    index_map(m);
    return rc;
}

/* One owner reference; the first controller with kind and name counts. */
static int owner_pull(struct rd *r, struct wh_meta *m)
{
    if (k8s_jpull_peek(r->p) != K8S_J_OBJECT)
        return k8s_jpull_skip(r->p);
    const char *kind = NULL, *name = NULL, *api = NULL, *k;
    int controller = 0, st = 0, rc;
    size_t kn;
    while ((rc = k8s_jpull_member(r->p, &st, &k, &kn)) > 0) {
        int v = k8s_jkey_is(k, kn, "kind")         ? string(r, &kind)
                : k8s_jkey_is(k, kn, "name")       ? string(r, &name)
                : k8s_jkey_is(k, kn, "apiVersion") ? string(r, &api)
                : k8s_jkey_is(k, kn, "controller") ? (controller = k8s_jpull_true(r->p))
                                                   : k8s_jpull_skip(r->p);
        if (v < 0)
            return -1;
    }
    if (rc == 0 && !m->owner_kind && controller > 0 && kind && name) {
        m->owner_kind = kind;
        m->owner_name = name;
        m->owner_api_version = api;
    }
    return rc;
}

static int owners_pull(struct rd *r, struct wh_meta *m)
{
    /* of duplicate members the last counts */
    m->owner_kind = m->owner_name = m->owner_api_version = NULL;
    if (k8s_jpull_peek(r->p) != K8S_J_ARRAY)
        return k8s_jpull_skip(r->p);
    int st = 0, e;
    while ((e = k8s_jpull_element(r->p, &st)) > 0)
        if (owner_pull(r, m) < 0)
            return -1;
    return e;
}

static int meta_member(struct rd *r, struct wh_meta *m, const char *k, size_t n)
{
    static const struct {
        const char *key;
        size_t at;
    } strings[] = {
        {"name", offsetof(struct wh_meta, name)},
        {"generateName", offsetof(struct wh_meta, generate_name)},
        {"namespace", offsetof(struct wh_meta, ns)},
        {"creationTimestamp", offsetof(struct wh_meta, created)},
    };
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        if (k8s_jkey_is(k, n, strings[i].key))
            return string(r, (const char **)((char *)m + strings[i].at));
    if (k8s_jkey_is(k, n, "labels"))
        return map_pull(r, &m->labels);
    if (k8s_jkey_is(k, n, "annotations"))
        return map_pull(r, &m->annotations);
    if (k8s_jkey_is(k, n, "ownerReferences"))
        return owners_pull(r, m);
    return k8s_jpull_skip(r->p);
}

int wh_meta_pull(struct k8s_jpull *p, void *arg)
{
    struct wh_meta *m = arg;
    wh_meta_done(m); /* of duplicate members the last counts */
    struct rd r = {.p = p, .arena = m->arena};
    r.pool.base = k8s_arena_malloc(m->arena, k8s_jpull_left(p) + 1);
    if (!(m->pool = r.pool.base))
        return k8s_jpull_fail(p, "out of memory");
    if ((m->shape = shape_at(p, K8S_J_OBJECT)) != WH_SHAPE_LIST)
        return k8s_jpull_skip(p);
    int st = 0, rc;
    const char *k;
    size_t n;
    while ((rc = k8s_jpull_member(p, &st, &k, &n)) > 0) {
        /* the key's view ends with the next call: compare it first */
        if (meta_member(&r, m, k, n) < 0)
            return -1;
    }
    return rc;
}

/* ---------- reading a tree ---------- */

static int map_from_json(const json_t *o, struct wh_map *m)
{
    *m = (struct wh_map){.shape = wh_shape_of(o, true)};
    if (m->shape != WH_SHAPE_LIST)
        return 0;
    if (!(m->kv = calloc(json_object_size(o) + 1, sizeof(*m->kv))))
        return -K8S_ENOMEM;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        m->kv[m->n++] = (struct wh_kv){k, json_string_value(v), strlen(k)};
    }
    index_map(m);
    return 0;
}

static const char *str_at(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

int wh_meta_from_json(const json_t *meta, struct wh_meta *ret)
{
    *ret = (struct wh_meta){.shape = wh_shape_of(meta, true),
                            .name = str_at(meta, "name"),
                            .generate_name = str_at(meta, "generateName"),
                            .ns = str_at(meta, "namespace"),
                            .created = str_at(meta, "creationTimestamp")};
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, ref)
    {
        if (json_is_true(json_object_get(ref, "controller")) && str_at(ref, "kind") &&
            str_at(ref, "name")) {
            ret->owner_kind = str_at(ref, "kind");
            ret->owner_name = str_at(ref, "name");
            ret->owner_api_version = str_at(ref, "apiVersion");
            break;
        }
    }
    int r = map_from_json(json_object_get(meta, "labels"), &ret->labels);
    r = r ? r : map_from_json(json_object_get(meta, "annotations"), &ret->annotations);
    if (r < 0)
        wh_meta_done(ret);
    return r;
}

int wh_pod_from_json(const json_t *pod, struct wh_pod *ret)
{
    *ret = (struct wh_pod){.shape = wh_shape_of(pod, true)};
    int r = wh_meta_from_json(json_object_get(pod, "metadata"), &ret->meta);
    r = r ? r : wh_podspec_from_json(json_object_get(pod, "spec"), &ret->spec);
    if (r < 0)
        wh_pod_done(ret);
    return r;
}

void wh_pod_done(struct wh_pod *pod)
{
    if (!pod)
        return;
    wh_meta_done(&pod->meta);
    wh_podspec_done(&pod->spec);
    pod->shape = WH_SHAPE_ABSENT;
}
