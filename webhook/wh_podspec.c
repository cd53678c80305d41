#include "wh_podspec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_arena.h"
#include "k8s_jsonload.h"

static const char *const list_names[WH_NLISTS] = {"containers", "initContainers"};

const char *wh_podspec_list_name(enum wh_podspec_list l)
{
    return list_names[l];
}

/* ---------- arrays ---------- */

/* Room for one more element in *arr (n used); false on OOM. */
static bool grow(struct k8s_arena *arena, void *arr, size_t n, size_t size)
{
    void **a = arr;
    if (n & (n - 1) || (n && n < 4)) /* capacity is the next power of two ≥ 4 */
        return true;
    void *p = k8s_arena_realloc(arena, *a, n * size, (n < 4 ? 4 : 2 * n) * size);
    if (!p)
        return false;
    *a = p;
    return true;
}

/* Release c's arrays (from arena, NULL: malloc'd). */
static void container_free(struct k8s_arena *arena, struct wh_container *c)
{
    k8s_arena_release(arena, c->env);
    k8s_arena_release(arena, c->mounts);
    free(c->raw_pool); /* only a tree's containers have one */
    *c = (struct wh_container){0};
}

void wh_container_done(struct wh_container *c)
{
    container_free(NULL, c);
}

static void list_done(struct wh_podspec *s, enum wh_podspec_list l)
{
    for (size_t i = 0; i < s->list[l].n; i++)
        container_free(s->arena, &s->list[l].c[i]);
    k8s_arena_release(s->arena, s->list[l].c);
    s->list[l].c = NULL;
    s->list[l].n = 0;
}

void wh_podspec_done(struct wh_podspec *s)
{
    if (!s)
        return;
    for (int l = 0; l < WH_NLISTS; l++)
        list_done(s, (enum wh_podspec_list)l);
    k8s_arena_release(s->arena, s->volumes);
    k8s_arena_release(s->arena, s->pool);
    *s = (struct wh_podspec){.arena = s->arena};
}

/* ---------- reading text ---------- */

struct rd {
    struct k8s_jpull *p;
    struct k8s_arena *arena; /* the arrays' and the strings' (s->arena) */
    struct k8s_jpool pool;   /* the decoded strings (s->pool) */
};

/* A string value kept, or NULL (any other value is skipped). */
static int string(struct rd *r, const char **out, size_t *len)
{
    return k8s_jpull_keep(r->p, &r->pool, out, len);
}

typedef int member_fn(struct rd *r, const char *k, size_t n, void *arg);
typedef int element_fn(struct rd *r, void *arg);

/* Walk the object at the cursor, fn reading each member's value; any
 * other value is skipped (*is_object false). Inline in each caller, so
 * fn is too. */
static inline __attribute__((always_inline)) int object(struct rd *r, member_fn *fn, void *arg,
                                                        bool *is_object)
{
    *is_object = k8s_jpull_peek(r->p) == K8S_J_OBJECT;
    if (!*is_object)
        return k8s_jpull_skip(r->p);
    int st = 0, m;
    const char *k;
    size_t n;
    while ((m = k8s_jpull_member(r->p, &st, &k, &n)) > 0)
        if (fn(r, k, n, arg) < 0)
            return -1;
    return m;
}

/* A list member: its shape, and fn for each element when it is one. */
static inline __attribute__((always_inline)) int list(struct rd *r, element_fn *fn, void *arg,
                                                      enum wh_shape *shape)
{
    enum k8s_jtype t = k8s_jpull_peek(r->p);
    *shape = t == K8S_J_ARRAY ? WH_SHAPE_LIST : t == K8S_J_NULL ? WH_SHAPE_NULL : WH_SHAPE_OTHER;
    if (t != K8S_J_ARRAY)
        return k8s_jpull_skip(r->p);
    int st = 0, e;
    while ((e = k8s_jpull_element(r->p, &st)) > 0)
        if (fn(r, arg) < 0)
            return -1;
    return e;
}

/* Room for one more of *arr's n elements, or the reader fails. */
static int more(struct rd *r, void *arr, size_t n, size_t size)
{
    return grow(r->arena, arr, n, size) ? 0 : k8s_jpull_fail(r->p, "out of memory");
}

/* ---------- the fields ---------- */

static int envvar_member(struct rd *r, const char *k, size_t n, void *arg)
{
    struct wh_envvar *e = arg;
    if (k8s_jkey_is(k, n, "name"))
        return string(r, &e->name, &e->len);
    if (k8s_jkey_is(k, n, "value"))
        return string(r, &e->value, &e->vlen);
    e->value_from |= k8s_jkey_is(k, n, "valueFrom");
    return k8s_jpull_skip(r->p);
}

static int envvar(struct rd *r, void *arg)
{
    struct wh_container *c = arg;
    bool obj;
    if (more(r, &c->env, c->n_env, sizeof(*c->env)) < 0)
        return -1;
    struct wh_envvar *e = &c->env[c->n_env++];
    *e = (struct wh_envvar){0};
    k8s_jpull_peek(r->p); /* to the entry's first byte */
    const char *start = k8s_jpull_pos(r->p);
    if (object(r, envvar_member, e, &obj) < 0)
        return -1;
    const char *end = k8s_jpull_pos(r->p);
    while (end > start && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        end--;
    e->raw = start;
    e->raw_len = (size_t)(end - start);
    return 0;
}

static int mount_member(struct rd *r, const char *k, size_t n, void *arg)
{
    struct wh_mount *m = arg;
    if (k8s_jkey_is(k, n, "name"))
        return string(r, &m->name, NULL);
    if (k8s_jkey_is(k, n, "mountPath"))
        return string(r, &m->mount_path, NULL);
    return k8s_jpull_skip(r->p);
}

static int mount(struct rd *r, void *arg)
{
    struct wh_container *c = arg;
    bool obj;
    if (more(r, &c->mounts, c->n_mounts, sizeof(*c->mounts)) < 0)
        return -1;
    struct wh_mount *m = &c->mounts[c->n_mounts++];
    *m = (struct wh_mount){0};
    return object(r, mount_member, m, &obj);
}

static int container_member(struct rd *r, const char *k, size_t n, void *arg)
{
    struct wh_container *c = arg;
    if (k8s_jkey_is(k, n, "name"))
        return string(r, &c->name, NULL);
    if (k8s_jkey_is(k, n, "restartPolicy"))
        return string(r, &c->restart_policy, NULL);
    if (k8s_jkey_is(k, n, "env")) {
        c->n_env = 0; /* of duplicates the last counts */
        return list(r, envvar, c, &c->env_shape);
    }
    if (k8s_jkey_is(k, n, "volumeMounts")) {
        c->n_mounts = 0;
        return list(r, mount, c, &c->mounts_shape);
    }
    return k8s_jpull_skip(r->p);
}

struct list_arg {
    struct wh_podspec *s;
    enum wh_podspec_list l;
};

static int container(struct rd *r, void *arg)
{
    struct list_arg *a = arg;
    struct wh_podspec *s = a->s;
    if (more(r, &s->list[a->l].c, s->list[a->l].n, sizeof(struct wh_container)) < 0)
        return -1;
    struct wh_container *c = &s->list[a->l].c[s->list[a->l].n++];
    *c = (struct wh_container){0};
    return object(r, container_member, c, &c->is_object);
}

static int volume_member(struct rd *r, const char *k, size_t n, void *arg)
{
    return k8s_jkey_is(k, n, "name") ? string(r, arg, NULL) : k8s_jpull_skip(r->p);
}

static int volume(struct rd *r, void *arg)
{
    struct wh_podspec *s = arg;
    bool obj;
    if (more(r, &s->volumes, s->n_volumes, sizeof(*s->volumes)) < 0)
        return -1;
    const char **name = &s->volumes[s->n_volumes++];
    *name = NULL;
    return object(r, volume_member, (void *)name, &obj);
}

static int spec_member(struct rd *r, const char *k, size_t n, void *arg)
{
    struct wh_podspec *s = arg;
    for (int l = 0; l < WH_NLISTS; l++) {
        if (!k8s_jkey_is(k, n, list_names[l]))
            continue;
        list_done(s, (enum wh_podspec_list)l);
        struct list_arg a = {s, (enum wh_podspec_list)l};
        return list(r, container, &a, &s->list[l].shape);
    }
    if (k8s_jkey_is(k, n, "volumes")) {
        s->n_volumes = 0;
        return list(r, volume, s, &s->volumes_shape);
    }
    return k8s_jpull_skip(r->p);
}

int wh_podspec_pull(struct k8s_jpull *p, void *arg)
{
    struct wh_podspec *s = arg;
    wh_podspec_done(s); /* of duplicate members the last counts */
    struct rd r = {.p = p, .arena = s->arena};
    r.pool.base = k8s_arena_malloc(s->arena, k8s_jpull_left(p) + 1);
    if (!(s->pool = r.pool.base))
        return k8s_jpull_fail(p, "out of memory");
    bool obj;
    enum k8s_jtype t = k8s_jpull_peek(p);
    int rc = object(&r, spec_member, s, &obj);
    s->shape = obj ? WH_SHAPE_LIST : t == K8S_J_NULL ? WH_SHAPE_NULL : WH_SHAPE_OTHER;
    return rc;
}

int wh_podspec_read(const char *text, size_t len, struct k8s_arena *arena, struct wh_podspec *ret)
{
    *ret = (struct wh_podspec){.arena = arena};
    if (!text)
        return 0;
    struct k8s_error err;
    int r = k8s_json_pull_text(text, len, wh_podspec_pull, ret, &err);
    if (r < 0)
        wh_podspec_done(ret);
    return r;
}

/* ---------- reading a tree ---------- */

enum wh_shape wh_shape_of(const json_t *v, bool object)
{
    return !v                                                ? WH_SHAPE_ABSENT
           : json_is_null(v)                                 ? WH_SHAPE_NULL
           : (object ? json_is_object(v) : json_is_array(v)) ? WH_SHAPE_LIST
                                                             : WH_SHAPE_OTHER;
}

static const char *str_of(const json_t *o, const char *k, size_t *len)
{
    const json_t *v = json_object_get(o, k);
    if (len)
        *len = json_string_length(v);
    return json_string_value(v);
}

/* Each env entry's text: jansson's compact dump, one after the other in
 * c->raw_pool. */
static int raw_from_json(const json_t *env, struct wh_container *c)
{
    size_t total = 0, at = 0;
    for (size_t i = 0; i < c->n_env; i++)
        total += json_dumpb(json_array_get(env, i), NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!(c->raw_pool = malloc(total + 1)))
        return -K8S_ENOMEM;
    for (size_t i = 0; i < c->n_env; i++) {
        size_t n = json_dumpb(json_array_get(env, i), c->raw_pool + at, total - at,
                              JSON_COMPACT | JSON_ENCODE_ANY);
        c->env[i].raw = c->raw_pool + at;
        c->env[i].raw_len = n;
        at += n;
    }
    return 0;
}

int wh_container_from_json(const json_t *c, struct wh_container *ret)
{
    *ret = (struct wh_container){.is_object = json_is_object(c)};
    const json_t *env = json_object_get(c, "env"), *mounts = json_object_get(c, "volumeMounts");
    ret->name = str_of(c, "name", NULL);
    ret->restart_policy = str_of(c, "restartPolicy", NULL);
    ret->env_shape = wh_shape_of(env, false);
    ret->mounts_shape = wh_shape_of(mounts, false);
    ret->env = calloc(json_array_size(env) + 1, sizeof(*ret->env));
    ret->mounts = calloc(json_array_size(mounts) + 1, sizeof(*ret->mounts));
    if (!ret->env || !ret->mounts) {
        wh_container_done(ret);
        return -K8S_ENOMEM;
    }
    for (size_t i = 0; i < json_array_size(env); i++) {
        const json_t *e = json_array_get(env, i);
        struct wh_envvar *v = &ret->env[ret->n_env++];
        v->name = str_of(e, "name", &v->len);
        v->value = str_of(e, "value", &v->vlen);
        v->value_from = json_object_get(e, "valueFrom") != NULL;
    }
    if (raw_from_json(env, ret) < 0) {
        wh_container_done(ret);
        return -K8S_ENOMEM;
    }
    for (size_t i = 0; i < json_array_size(mounts); i++) {
        const json_t *m = json_array_get(mounts, i);
        ret->mounts[ret->n_mounts++] =
            (struct wh_mount){str_of(m, "name", NULL), str_of(m, "mountPath", NULL)};
    }
    return 0;
}

static int list_from_json(struct wh_podspec *s, enum wh_podspec_list l, const json_t *a)
{
    s->list[l].shape = wh_shape_of(a, false);
    if (!(s->list[l].c = calloc(json_array_size(a) + 1, sizeof(struct wh_container))))
        return -K8S_ENOMEM;
    for (size_t i = 0; i < json_array_size(a); i++, s->list[l].n++)
        if (wh_container_from_json(json_array_get(a, i), &s->list[l].c[i]) < 0)
            return -K8S_ENOMEM;
    return 0;
}

int wh_podspec_from_json(const json_t *spec, struct wh_podspec *ret)
{
    *ret = (struct wh_podspec){.shape = wh_shape_of(spec, true)};
    const json_t *vols = json_object_get(spec, "volumes");
    int r = 0;
    for (int l = 0; l < WH_NLISTS && r == 0; l++)
        r = list_from_json(ret, (enum wh_podspec_list)l, json_object_get(spec, list_names[l]));
    ret->volumes_shape = wh_shape_of(vols, false);
    if (r == 0 && !(ret->volumes = calloc(json_array_size(vols) + 1, sizeof(*ret->volumes))))
        r = -K8S_ENOMEM;
    for (size_t i = 0; r == 0 && i < json_array_size(vols); i++)
        ret->volumes[ret->n_volumes++] = str_of(json_array_get(vols, i), "name", NULL);
    if (r < 0)
        wh_podspec_done(ret);
    return r;
}
