#include "wh_podspec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

static const char *const list_names[WH_NLISTS] = {"containers", "initContainers"};

const char *wh_podspec_list_name(enum wh_podspec_list l)
{
    return list_names[l];
}

/* ---------- arrays ---------- */

/* Room for one more element in *arr (n used); false on OOM. */
static bool grow(void *arr, size_t n, size_t size)
{
    void **a = arr;
    if (n & (n - 1) || (n && n < 4)) /* capacity is the next power of two ≥ 4 */
        return true;
    void *p = realloc(*a, (n < 4 ? 4 : 2 * n) * size);
    if (!p)
        return false;
    *a = p;
    return true;
}

void wh_container_done(struct wh_container *c)
{
    free(c->env);
    free(c->mounts);
    *c = (struct wh_container){0};
}

static void list_done(struct wh_podspec *s, enum wh_podspec_list l)
{
    for (size_t i = 0; i < s->list[l].n; i++)
        wh_container_done(&s->list[l].c[i]);
    free(s->list[l].c);
    s->list[l].c = NULL;
    s->list[l].n = 0;
}

void wh_podspec_done(struct wh_podspec *s)
{
    if (!s)
        return;
    for (int l = 0; l < WH_NLISTS; l++)
        list_done(s, (enum wh_podspec_list)l);
    free(s->volumes);
    free(s->pool);
    *s = (struct wh_podspec){0};
}

/* ---------- reading text ---------- */

struct rd {
    const char *p, *end;
    char *pool; /* decoded strings; len + 1 bytes hold them all */
    size_t used;
    bool err; /* the text ended early or is not what valid JSON can be */
    bool oom;
};

/* The first '"' or '\\' at or after p (end when none). */
static const char *special(const char *p, const char *end)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)));
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\')
        p++;
    return p;
}

static void ws(struct rd *r)
{
    while (r->p < r->end && (unsigned char)*r->p <= ' ')
        r->p++;
}

static bool at(struct rd *r, char c)
{
    ws(r);
    if (r->p < r->end && *r->p == c)
        return true;
    r->err = r->p >= r->end || r->err;
    return false;
}

static void skip_string(struct rd *r)
{
    const char *p = r->p + 1;
    while ((p = special(p, r->end)) < r->end && *p == '\\')
        p += 2; /* the escaped byte; \u's hex digits are plain */
    r->err |= p >= r->end;
    r->p = p < r->end ? p + 1 : r->end;
}

/* Skip one value (the text is valid JSON: find its end). */
static void skip_value(struct rd *r)
{
    int depth = 0;
    ws(r);
    do {
        if (r->p >= r->end) {
            r->err = true;
            return;
        }
        char c = *r->p;
        if (c == '"') {
            skip_string(r);
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']')
            depth--;
        else if (!depth) { /* a number or literal: up to its delimiter */
            while (r->p < r->end && *r->p != ',' && *r->p != '}' && *r->p != ']' &&
                   (unsigned char)*r->p > ' ')
                r->p++;
            return;
        }
        r->p++;
    } while (depth > 0);
}

static unsigned hex4(const char *p)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 4 | (unsigned)(p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
    return v;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | cp >> 6);
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | cp >> 12);
        *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | cp >> 18);
        *o++ = (char)(0x80 | (cp >> 12 & 0x3F));
        *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* The escape at p (a backslash) decoded to *o; returns what follows it. */
static const char *unescape(const char *p, const char *end, char **o)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (end - p >= 6 && p[1] == 'u') {
        unsigned cp = hex4(p + 2);
        p += 6;
        if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(p + 2) - 0xDC00);
            p += 6;
        }
        *o = put_utf8(*o, cp);
        return p;
    }
    const char *f = end - p >= 2 && p[1] ? strchr(from, p[1]) : NULL;
    *(*o)++ = f ? to[f - from] : '?';
    return p + 2;
}

/* Decode the string at r->p into out (room for its raw length); its
 * decoded length, the input advanced past it. */
static size_t decode(struct rd *r, char *out)
{
    const char *p = r->p + 1;
    char *o = out;
    for (;;) {
        const char *run = p;
        p = special(p, r->end);
        memcpy(o, run, (size_t)(p - run));
        o += p - run;
        if (p >= r->end || *p == '"')
            break;
        p = unescape(p, r->end, &o);
    }
    r->err |= p >= r->end;
    r->p = p < r->end ? p + 1 : r->end;
    return (size_t)(o - out);
}

/* A string value into the pool (NUL-terminated), or NULL (any other value
 * is skipped). */
static const char *string(struct rd *r, size_t *len)
{
    size_t n = 0;
    const char *s = NULL;
    if (at(r, '"')) {
        char *out = r->pool + r->used;
        n = decode(r, out);
        out[n] = '\0';
        r->used += n + 1;
        s = out;
    } else {
        skip_value(r);
    }
    if (len)
        *len = n;
    return s;
}

/* A member name: a view of the input, or decoded into buf when escaped
 * (names too long for buf cannot be one the reader looks for: "" then). */
static size_t key(struct rd *r, char buf[32], const char **k)
{
    const char *p = r->p + 1, *q = special(p, r->end);
    if (q < r->end && *q == '"') {
        *k = p;
        r->p = q + 1;
        return (size_t)(q - p);
    }
    const char *start = r->p;
    skip_string(r);
    *k = buf;
    if (r->p - start > 32) /* the decoded text is shorter than the raw */
        return 0;
    struct rd t = {.p = start, .end = r->p};
    return decode(&t, buf);
}

static bool is(const char *k, size_t n, const char *name)
{
    return strlen(name) == n && !memcmp(k, name, n);
}

typedef void member_fn(struct rd *r, const char *k, size_t n, void *arg);
typedef void element_fn(struct rd *r, void *arg);

/* Walk an object at r->p, calling fn for each member (fn consumes the
 * value); false when the value is not an object (then skipped). */
static bool object(struct rd *r, member_fn *fn, void *arg)
{
    if (!at(r, '{')) {
        skip_value(r);
        return false;
    }
    r->p++;
    if (at(r, '}')) {
        r->p++;
        return true;
    }
    while (!r->err && at(r, '"')) {
        char buf[32];
        const char *k;
        size_t n = key(r, buf, &k);
        if (!at(r, ':'))
            break;
        r->p++;
        fn(r, k, n, arg);
        if (!at(r, ',')) {
            r->err |= !at(r, '}');
            r->p++;
            return true;
        }
        r->p++;
    }
    r->err = true;
    return true;
}

/* A list member: its shape, and fn for each element when it is one. */
static enum wh_shape list(struct rd *r, element_fn *fn, void *arg)
{
    ws(r);
    enum wh_shape shape = r->p < r->end && *r->p == '[' ? WH_SHAPE_LIST
                          : r->p < r->end && *r->p == 'n' ? WH_SHAPE_NULL
                                                          : WH_SHAPE_OTHER;
    if (shape != WH_SHAPE_LIST) {
        skip_value(r);
        return shape;
    }
    r->p++;
    if (at(r, ']')) {
        r->p++;
        return shape;
    }
    while (!r->err) {
        fn(r, arg);
        if (!at(r, ',')) {
            r->err |= !at(r, ']');
            r->p++;
            break;
        }
        r->p++;
    }
    return shape;
}

/* ---------- the fields ---------- */

static void envvar_member(struct rd *r, const char *k, size_t n, void *arg)
{
    struct wh_envvar *e = arg;
    if (is(k, n, "name"))
        e->name = string(r, &e->len);
    else if (is(k, n, "value"))
        e->value = string(r, &e->vlen);
    else
        e->value_from |= is(k, n, "valueFrom"), skip_value(r);
}

static void envvar(struct rd *r, void *arg)
{
    struct wh_container *c = arg;
    if (!grow(&c->env, c->n_env, sizeof(*c->env))) {
        r->err = r->oom = true;
        return;
    }
    struct wh_envvar *e = &c->env[c->n_env++];
    *e = (struct wh_envvar){0};
    (void)object(r, envvar_member, e);
}

static void mount_member(struct rd *r, const char *k, size_t n, void *arg)
{
    struct wh_mount *m = arg;
    if (is(k, n, "name"))
        m->name = string(r, NULL);
    else if (is(k, n, "mountPath"))
        m->mount_path = string(r, NULL);
    else
        skip_value(r);
}

static void mount(struct rd *r, void *arg)
{
    struct wh_container *c = arg;
    if (!grow(&c->mounts, c->n_mounts, sizeof(*c->mounts))) {
        r->err = r->oom = true;
        return;
    }
    struct wh_mount *m = &c->mounts[c->n_mounts++];
    *m = (struct wh_mount){0};
    (void)object(r, mount_member, m);
}

static void container_member(struct rd *r, const char *k, size_t n, void *arg)
{
    struct wh_container *c = arg;
    if (is(k, n, "name")) {
        c->name = string(r, NULL);
    } else if (is(k, n, "restartPolicy")) {
        c->restart_policy = string(r, NULL);
    } else if (is(k, n, "env")) {
        c->n_env = 0; /* of duplicates the last counts */
        c->env_shape = list(r, envvar, c);
    } else if (is(k, n, "volumeMounts")) {
        c->n_mounts = 0;
        c->mounts_shape = list(r, mount, c);
    } else {
        skip_value(r);
    }
}

struct list_arg {
    struct wh_podspec *s;
    enum wh_podspec_list l;
};

static void container(struct rd *r, void *arg)
{
    struct list_arg *a = arg;
    struct wh_podspec *s = a->s;
    if (!grow(&s->list[a->l].c, s->list[a->l].n, sizeof(struct wh_container))) {
        r->err = r->oom = true;
        return;
    }
    struct wh_container *c = &s->list[a->l].c[s->list[a->l].n++];
    *c = (struct wh_container){0};
    c->is_object = object(r, container_member, c);
}

static void volume_member(struct rd *r, const char *k, size_t n, void *arg)
{
    if (is(k, n, "name"))
        *(const char **)arg = string(r, NULL);
    else
        skip_value(r);
}

static void volume(struct rd *r, void *arg)
{
    struct wh_podspec *s = arg;
    if (!grow(&s->volumes, s->n_volumes, sizeof(*s->volumes))) {
        r->err = r->oom = true;
        return;
    }
    const char **name = &s->volumes[s->n_volumes++];
    *name = NULL;
    (void)object(r, volume_member, (void *)name);
}

static void spec_member(struct rd *r, const char *k, size_t n, void *arg)
{
    struct wh_podspec *s = arg;
    for (int l = 0; l < WH_NLISTS; l++) {
        if (!is(k, n, list_names[l]))
            continue;
        list_done(s, (enum wh_podspec_list)l);
        struct list_arg a = {s, (enum wh_podspec_list)l};
        s->list[l].shape = list(r, container, &a);
        return;
    }
    if (is(k, n, "volumes")) {
        s->n_volumes = 0;
        s->volumes_shape = list(r, volume, s);
    } else {
        skip_value(r);
    }
}

int wh_podspec_read(const char *text, size_t len, struct wh_podspec *ret)
{
    *ret = (struct wh_podspec){0};
    if (!text)
        return 0;
    struct rd r = {.p = text, .end = text + len, .pool = malloc(len + 1)};
    if (!r.pool)
        return -K8S_ENOMEM;
    ret->pool = r.pool;
    ws(&r);
    if (r.p < r.end && *r.p == 'n')
        ret->shape = WH_SHAPE_NULL;
    else if (object(&r, spec_member, ret))
        ret->shape = WH_SHAPE_LIST;
    else
        ret->shape = WH_SHAPE_OTHER;
    if (r.err) {
        wh_podspec_done(ret);
        return r.oom ? -K8S_ENOMEM : -K8S_EPARSE;
    }
    return 0;
}

/* ---------- reading a tree ---------- */

static enum wh_shape shape_of(const json_t *v, bool object)
{
    return !v                                                 ? WH_SHAPE_ABSENT
           : json_is_null(v)                                  ? WH_SHAPE_NULL
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

int wh_container_from_json(const json_t *c, struct wh_container *ret)
{
    *ret = (struct wh_container){.is_object = json_is_object(c)};
    const json_t *env = json_object_get(c, "env"), *mounts = json_object_get(c, "volumeMounts");
    ret->name = str_of(c, "name", NULL);
    ret->restart_policy = str_of(c, "restartPolicy", NULL);
    ret->env_shape = shape_of(env, false);
    ret->mounts_shape = shape_of(mounts, false);
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
    for (size_t i = 0; i < json_array_size(mounts); i++) {
        const json_t *m = json_array_get(mounts, i);
        ret->mounts[ret->n_mounts++] =
            (struct wh_mount){str_of(m, "name", NULL), str_of(m, "mountPath", NULL)};
    }
    return 0;
}

static int list_from_json(struct wh_podspec *s, enum wh_podspec_list l, const json_t *a)
{
    s->list[l].shape = shape_of(a, false);
    if (!(s->list[l].c = calloc(json_array_size(a) + 1, sizeof(struct wh_container))))
        return -K8S_ENOMEM;
    for (size_t i = 0; i < json_array_size(a); i++, s->list[l].n++)
        if (wh_container_from_json(json_array_get(a, i), &s->list[l].c[i]) < 0)
            return -K8S_ENOMEM;
    return 0;
}

int wh_podspec_from_json(const json_t *spec, struct wh_podspec *ret)
{
    *ret = (struct wh_podspec){.shape = shape_of(spec, true)};
    const json_t *vols = json_object_get(spec, "volumes");
    int r = 0;
    for (int l = 0; l < WH_NLISTS && r == 0; l++)
        r = list_from_json(ret, (enum wh_podspec_list)l, json_object_get(spec, list_names[l]));
    ret->volumes_shape = shape_of(vols, false);
    if (r == 0 && !(ret->volumes = calloc(json_array_size(vols) + 1, sizeof(*ret->volumes))))
        r = -K8S_ENOMEM;
    for (size_t i = 0; r == 0 && i < json_array_size(vols); i++)
        ret->volumes[ret->n_volumes++] = str_of(json_array_get(vols, i), "name", NULL);
    if (r < 0)
        wh_podspec_done(ret);
    return r;
}
