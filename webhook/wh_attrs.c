#include "wh_attrs.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wh_warn.h"

void wh_attrs_init(struct wh_attrs *a)
{
    memset(a, 0, sizeof(*a));
}

void wh_attrs_done(struct wh_attrs *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        free(a->kv[i].key); /* the pair's one block */
    free(a->kv);
    memset(a, 0, sizeof(*a));
}

/* 1 for an octet written as it is: a W3C baggage value octet (0x21,
 * 0x23-0x2B, 0x2D-0x3A, 0x3C-0x5B, 0x5D-0x7E), except the three that would
 * change what the process reads ('$' 0x24, '%' 0x25, '=' 0x3D). */
static const unsigned char plain[256] = {
    [0x21] = 1, [0x23] = 1,          [0x26 ... 0x2B] = 1, [0x2D ... 0x3A] = 1,
    [0x3C] = 1, [0x3E ... 0x5B] = 1, [0x5D ... 0x7E] = 1,
};

static bool plain_octet(unsigned char c)
{
    return plain[c];
}

/* Bytes of s in written form: encoded ("%XX" for each octet not plain),
 * or as it is. */
static size_t written_len(const char *s, bool encode)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; encode && *p; p++)
        n += plain_octet(*p) ? 1 : 3;
    return encode ? n : strlen(s);
}

/* s in written form at t; returns the end. */
static char *write_text(char *t, const char *s, bool encode)
{
    static const char hex[] = "0123456789ABCDEF";
    if (!encode) {
        size_t n = strlen(s);
        memcpy(t, s, n);
        return t + n;
    }
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (plain_octet(*p)) {
            *t++ = (char)*p;
            continue;
        }
        *t++ = '%';
        *t++ = hex[*p >> 4];
        *t++ = hex[*p & 15];
    }
    return t;
}

int wh_attrs_encode(const char *v, struct k8s_buf *out)
{
    size_t n = written_len(v, true);
    char *t;
    int r = k8s_buf_reserve(out, n, &t);
    if (r == 0)
        k8s_buf_commit(out, (size_t)(write_text(t, v, true) - t));
    return r;
}

static struct wh_attr *find(const struct wh_attrs *a, const char *key)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->kv[i].key, key))
            return &a->kv[i];
    return NULL;
}

const char *wh_attrs_get(const struct wh_attrs *a, const char *key)
{
    struct wh_attr *kv = find(a, key);
    return kv ? kv->value : NULL;
}

bool wh_attrs_has_prefix(const struct wh_attrs *a, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i < a->n; i++)
        if (!strncmp(a->kv[i].key, prefix, n))
            return true;
    return false;
}

/* Keep the pair in block (key, NUL, value at value): it replaces the
 * pair of that key in place, else goes last. Takes block (freed on
 * failure). */
static int keep(struct wh_attrs *a, char *block, char *value)
{
    struct wh_attr *kv = find(a, block);
    if (kv) {
        free(kv->key);
        *kv = (struct wh_attr){block, value};
        return 0;
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        struct wh_attr *p = realloc(a->kv, cap * sizeof(*p));
        if (!p) {
            free(block);
            return -K8S_ENOMEM;
        }
        a->kv = p;
        a->cap = cap;
    }
    a->kv[a->n++] = (struct wh_attr){block, value};
    return 0;
}

/* Set key (encoded or as it is) to the concatenation of the NULL-ended
 * value parts (likewise), written straight into one block. */
static int store(struct wh_attrs *a, const char *key, bool encode_key, const char *const value[],
                 bool encode_value)
{
    size_t n = written_len(key, encode_key) + 2;
    for (size_t i = 0; value[i]; i++)
        n += written_len(value[i], encode_value);
    char *block = malloc(n);
    if (!block)
        return -K8S_ENOMEM;
    char *t = write_text(block, key, encode_key);
    *t++ = '\0';
    char *v = t;
    for (size_t i = 0; value[i]; i++)
        t = write_text(t, value[i], encode_value);
    *t = '\0';
    return keep(a, block, v);
}

int wh_attrs_set(struct wh_attrs *a, const char *key, const char *value)
{
    return store(a, key, true, (const char *const[]){value, NULL}, true);
}

int wh_attrs_put(struct wh_attrs *a, const char *key, const char *value)
{
    return store(a, key, false, (const char *const[]){value, NULL}, false);
}

int wh_attrs_set_ref(struct wh_attrs *a, const char *key, const char *var)
{
    return store(a, key, true, (const char *const[]){"$(", var, ")", NULL}, false);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* Every item of "k=v,...": literal text to encode, or (user) as written. */
static int parse(struct wh_attrs *a, const char *s, bool user, const char *where, json_t *warnings)
{
    char *copy = strdup(s), *save = NULL;
    if (!copy)
        return -K8S_ENOMEM;
    int r = 0;
    for (char *it = strtok_r(copy, ",", &save); it && r == 0; it = strtok_r(NULL, ",", &save)) {
        char *item = trim(it);
        char *eq = strchr(item, '=');
        if (!*item)
            continue;
        if (eq)
            *eq = '\0';
        char *key = trim(item);
        if ((!eq || !*key) && !user)
            wh_warnf(warnings, "%s: resource attribute \"%.40s\" ignored (want key=value)", where,
                     key);
        if (!eq || !*key)
            continue;
        r = user ? wh_attrs_put(a, key, trim(eq + 1)) : wh_attrs_set(a, key, trim(eq + 1));
    }
    free(copy);
    return r;
}

int wh_attrs_parse(struct wh_attrs *a, const char *s, const char *where, json_t *warnings)
{
    return parse(a, s, false, where, warnings);
}

int wh_attrs_parse_user(struct wh_attrs *a, const char *s)
{
    return parse(a, s, true, NULL, NULL);
}

int wh_attrs_write(const struct wh_attrs *a, struct k8s_buf *out)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++)
        n += strlen(a->kv[i].key) + strlen(a->kv[i].value) + 2;
    char *t, *start;
    int r = k8s_buf_reserve(out, n, &start);
    if (r < 0)
        return r;
    t = start;
    for (size_t i = 0; i < a->n; i++) {
        if (i)
            *t++ = ',';
        t = write_text(t, a->kv[i].key, false);
        *t++ = '=';
        t = write_text(t, a->kv[i].value, false);
    }
    k8s_buf_commit(out, (size_t)(t - start));
    return 0;
}

char *wh_attrs_format(const struct wh_attrs *a)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    return wh_attrs_write(a, &b) < 0 ? NULL : k8s_buf_take(&b, NULL);
}

char *wh_attrs_merge_into(const char *user, const struct wh_attrs *ours)
{
    struct wh_attrs theirs;
    wh_attrs_init(&theirs);
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    char *out = NULL;
    if (wh_attrs_parse_user(&theirs, user) < 0)
        goto out_done;
    size_t ulen = strlen(user);
    while (ulen > 0 && (user[ulen - 1] == ',' || isspace((unsigned char)user[ulen - 1])))
        ulen--; /* no empty item between the user's value and ours */
    for (size_t i = 0; i < ours->n; i++) {
        if (wh_attrs_get(&theirs, ours->kv[i].key))
            continue;
        if ((b.len == 0 && k8s_buf_append(&b, user, ulen) < 0) ||
            k8s_buf_cat(&b, b.len ? "," : "", ours->kv[i].key, "=", ours->kv[i].value, NULL) < 0)
            goto out_done;
    }
    /* nothing of ours missing: the user's value stays exactly as it was */
    out = b.len ? k8s_buf_take(&b, NULL) : strdup(user);
out_done:
    k8s_buf_done(&b);
    wh_attrs_done(&theirs);
    return out;
}
