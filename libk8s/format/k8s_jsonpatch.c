#include "k8s_jsonpatch.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- pointer construction ---------- */

int k8s_jsonptr_push(struct k8s_buf *ptr, const char *seg)
{
    int r = k8s_buf_append(ptr, "/", 1);
    const char *run = seg;
    for (const char *p = seg; r == 0; p++) {
        if (*p != '~' && *p != '/' && *p != '\0')
            continue;
        r = k8s_buf_append(ptr, run, (size_t)(p - run));
        if (r < 0 || *p == '\0')
            break;
        r = k8s_buf_append(ptr, *p == '~' ? "~0" : "~1", 2);
        run = p + 1;
    }
    return r;
}

int k8s_jsonptr_push_index(struct k8s_buf *ptr, size_t idx)
{
    int r = k8s_buf_append(ptr, "/", 1);
    return r ? r : k8s_buf_append_int(ptr, (long long)idx);
}

int k8s_jsonptr_push_end(struct k8s_buf *ptr)
{
    return k8s_buf_append(ptr, "/-", 2);
}

/* ---------- pointer parsing ---------- */

struct ptr {
    char **tok; /* unescaped reference tokens */
    size_t n;
    char *store; /* backing storage for the tokens */
};

static void ptr_done(struct ptr *p)
{
    free(p->tok);
    free(p->store);
}

/* Split and unescape. -1 on a malformed pointer or OOM. */
static int ptr_parse(const char *s, struct ptr *p)
{
    memset(p, 0, sizeof(*p));
    if (!*s)
        return 0;
    if (*s != '/')
        return -1;
    size_t len = strlen(s), n = 0;
    for (size_t i = 0; i < len; i++)
        n += s[i] == '/';
    p->store = malloc(len + 1);
    p->tok = calloc(n, sizeof(char *));
    if (!p->store || !p->tok)
        goto fail;
    char *w = p->store;
    for (const char *r = s; *r;) {
        r++; /* skip '/' */
        p->tok[p->n++] = w;
        for (; *r && *r != '/'; r++) {
            if (*r != '~') {
                *w++ = *r;
                continue;
            }
            if (r[1] != '0' && r[1] != '1')
                goto fail;
            *w++ = r[1] == '0' ? '~' : '/';
            r++;
        }
        *w++ = '\0';
    }
    return 0;
fail:
    ptr_done(p);
    memset(p, 0, sizeof(*p));
    return -1;
}

/* Array index per RFC 6901: "0" or [1-9][0-9]*; "-" means size when
 * allow_end. */
static bool arr_index(const char *tok, size_t size, bool allow_end, size_t *ret)
{
    if (allow_end && !strcmp(tok, "-")) {
        *ret = size;
        return true;
    }
    if (!*tok || (tok[0] == '0' && tok[1]) || strlen(tok) > 18)
        return false;
    size_t v = 0;
    for (const char *c = tok; *c; c++) {
        if (*c < '0' || *c > '9')
            return false;
        v = v * 10 + (size_t)(*c - '0');
    }
    if (v > size || (v == size && !allow_end))
        return false;
    *ret = v;
    return true;
}

static json_t *child(json_t *v, const char *tok)
{
    size_t i;
    if (json_is_object(v))
        return json_object_get(v, tok);
    if (json_is_array(v) && arr_index(tok, json_array_size(v), false, &i))
        return json_array_get(v, i);
    return NULL;
}

static json_t *resolve(json_t *root, const struct ptr *p, size_t upto)
{
    json_t *v = root;
    for (size_t i = 0; v && i < upto; i++)
        v = child(v, p->tok[i]);
    return v;
}

json_t *k8s_jsonptr_get(const json_t *doc, const char *s)
{
    struct ptr p;
    if (ptr_parse(s, &p) < 0)
        return NULL;
    json_t *v = resolve((json_t *)doc, &p, p.n);
    ptr_done(&p);
    return v;
}

/* ---------- equality ---------- */

int k8s_json_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b))
        return 0;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!k8s_json_equal(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    if (json_is_object(a)) {
        const char *k;
        json_t *v;
        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_object_foreach((json_t *)a, k, v)
        {
            json_t *w = json_object_get(b, k);
            if (!w || !k8s_json_equal(v, w))
                return 0;
        }
        return 1;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* ---------- operations ---------- */

struct op_ctx {
    json_t *root;          /* the working copy; may be replaced */
    struct k8s_error *err; /* where failures are described */
    size_t index;          /* operation index, for messages */
    const char *opname;
};

static int fail(struct op_ctx *c, const char *path, const char *why)
{
    return k8s_error_set(c->err, -K8S_EINVAL, "patch operation %zu (%s %s): %s", c->index,
                         c->opname, path, why);
}

/* add: steals value. */
static int do_add(struct op_ctx *c, const char *path, json_t *value)
{
    struct ptr p;
    int r = 0;
    if (ptr_parse(path, &p) < 0) {
        json_decref(value);
        return fail(c, path, "malformed JSON pointer");
    }
    if (p.n == 0) {
        json_decref(c->root);
        c->root = value;
        goto out;
    }
    json_t *parent = resolve(c->root, &p, p.n - 1);
    const char *last = p.tok[p.n - 1];
    size_t idx;
    if (json_is_object(parent)) {
        if (json_object_set_new(parent, last, value) < 0)
            r = fail(c, path, "cannot set member");
    } else if (json_is_array(parent) && arr_index(last, json_array_size(parent), true, &idx)) {
        if (json_array_insert_new(parent, idx, value) < 0)
            r = fail(c, path, "cannot insert");
    } else {
        json_decref(value);
        r = fail(c, path,
                 parent ? "index out of range or not a container" : "parent does not exist");
    }
out:
    ptr_done(&p);
    return r;
}

/* Detach the value at path; on success *ret_old holds a new reference. */
static int do_remove(struct op_ctx *c, const char *path, json_t **ret_old)
{
    struct ptr p;
    if (ptr_parse(path, &p) < 0)
        return fail(c, path, "malformed JSON pointer");
    int r = 0;
    json_t *parent = p.n ? resolve(c->root, &p, p.n - 1) : NULL;
    json_t *target = p.n ? child(parent, p.tok[p.n - 1]) : NULL;
    size_t idx;
    if (!target) {
        r = fail(c, path, p.n ? "path does not exist" : "cannot remove the document root");
        goto out;
    }
    if (ret_old)
        *ret_old = json_incref(target);
    if (json_is_object(parent))
        json_object_del(parent, p.tok[p.n - 1]);
    else if (arr_index(p.tok[p.n - 1], json_array_size(parent), false, &idx))
        json_array_remove(parent, idx);
out:
    ptr_done(&p);
    return r;
}

static int do_replace(struct op_ctx *c, const char *path, json_t *value)
{
    json_t *old = NULL;
    if (*path && !k8s_jsonptr_get(c->root, path)) {
        json_decref(value);
        return fail(c, path, "path does not exist");
    }
    if (*path) {
        int r = do_remove(c, path, &old);
        if (r < 0) {
            json_decref(value);
            return r;
        }
        json_decref(old);
    }
    return do_add(c, path, value);
}

static int do_move(struct op_ctx *c, const char *from, const char *path)
{
    size_t fl = strlen(from);
    if (!strcmp(from, path))
        return k8s_jsonptr_get(c->root, from) ? 0 : fail(c, from, "path does not exist");
    if (!strncmp(path, from, fl) && path[fl] == '/')
        return fail(c, path, "cannot move a value into one of its children");
    json_t *v = NULL;
    int r = do_remove(c, from, &v);
    return r < 0 ? r : do_add(c, path, v);
}

static int do_copy(struct op_ctx *c, const char *from, const char *path)
{
    json_t *src = k8s_jsonptr_get(c->root, from);
    if (!src)
        return fail(c, from, "from path does not exist");
    json_t *v = json_deep_copy(src);
    return v ? do_add(c, path, v) : k8s_error_set(c->err, -K8S_ENOMEM, "out of memory");
}

static int do_test(struct op_ctx *c, const char *path, const json_t *value)
{
    json_t *cur = k8s_jsonptr_get(c->root, path);
    if (!cur)
        return fail(c, path, "path does not exist");
    return k8s_json_equal(cur, value) ? 0 : fail(c, path, "test failed: values differ");
}

static int apply_one(struct op_ctx *c, const json_t *op)
{
    const char *name = json_string_value(json_object_get(op, "op"));
    const char *path = json_string_value(json_object_get(op, "path"));
    const char *from = json_string_value(json_object_get(op, "from"));
    json_t *value = json_object_get(op, "value"); /* JSON null is a value */
    c->opname = name ? name : "?";
    if (!json_is_object(op) || !name)
        return fail(c, "", "operation is not an object with a string \"op\"");
    if (!path)
        return fail(c, "", "missing string \"path\"");
    bool needs_value = !strcmp(name, "add") || !strcmp(name, "replace") || !strcmp(name, "test");
    bool needs_from = !strcmp(name, "move") || !strcmp(name, "copy");
    if (needs_value && !value)
        return fail(c, path, "missing \"value\"");
    if (needs_from && !from)
        return fail(c, path, "missing string \"from\"");
    if (!strcmp(name, "add") || !strcmp(name, "replace")) {
        json_t *v = json_deep_copy(value);
        if (!v)
            return k8s_error_set(c->err, -K8S_ENOMEM, "out of memory");
        return name[0] == 'a' ? do_add(c, path, v) : do_replace(c, path, v);
    }
    if (!strcmp(name, "remove")) {
        json_t *old = NULL;
        int r = do_remove(c, path, &old);
        json_decref(old);
        return r;
    }
    if (!strcmp(name, "move"))
        return do_move(c, from, path);
    if (!strcmp(name, "copy"))
        return do_copy(c, from, path);
    if (!strcmp(name, "test"))
        return do_test(c, path, value);
    return fail(c, path, "unknown operation");
}

int k8s_jsonpatch_apply(const json_t *doc, const json_t *patch, json_t **ret_doc,
                        struct k8s_error *reterr)
{
    if (!json_is_array(patch))
        return k8s_error_set(reterr, -K8S_EINVAL, "patch is not a JSON array");
    struct op_ctx c = {.root = json_deep_copy(doc), .err = reterr};
    if (!c.root)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    for (c.index = 0; c.index < json_array_size(patch); c.index++) {
        int r = apply_one(&c, json_array_get(patch, c.index));
        if (r < 0) {
            json_decref(c.root);
            return r;
        }
    }
    *ret_doc = c.root;
    return 0;
}

int k8s_jsonpatch_append_new(json_t *patch, const char *op, const char *path, json_t *value)
{
    json_t *o = json_object();
    if (!o || json_object_set_new_nocheck(o, "op", json_string(op)) < 0 ||
        json_object_set_new_nocheck(o, "path", json_string(path)) < 0) {
        json_decref(o);
        json_decref(value);
        return -K8S_ENOMEM;
    }
    /* jansson's *_new functions consume their argument even on failure */
    if (value && json_object_set_new(o, "value", value) < 0) {
        json_decref(o);
        return -K8S_ENOMEM;
    }
    return json_array_append_new(patch, o) < 0 ? -K8S_ENOMEM : 0;
}
