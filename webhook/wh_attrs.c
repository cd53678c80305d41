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
    for (size_t i = 0; i < a->n; i++) {
        free(a->kv[i].key);
        free(a->kv[i].value);
    }
    free(a->kv);
    memset(a, 0, sizeof(*a));
}

static bool baggage_octet(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c <= 0x2B) || (c >= 0x2D && c <= 0x3A) ||
           (c >= 0x3C && c <= 0x5B) || (c >= 0x5D && c <= 0x7E);
}

int wh_attrs_encode(const char *v, struct k8s_buf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    int r = 0;
    for (const unsigned char *p = (const unsigned char *)v; *p && r == 0; p++) {
        if (*p == '%' && isxdigit(p[1]) && isxdigit(p[2]))
            r = k8s_buf_append(out, p, 1); /* already an escape */
        else if (*p != '%' && baggage_octet(*p))
            r = k8s_buf_append(out, p, 1);
        else
            r = k8s_buf_append(out, (char[]){'%', hex[*p >> 4], hex[*p & 15]}, 3);
    }
    return r;
}

bool wh_attrs_valid_key(const char *key)
{
    if (!*key)
        return false;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        if (!baggage_octet(*p) || *p == '=')
            return false;
    return true;
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

int wh_attrs_set(struct wh_attrs *a, const char *key, const char *value)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    if (wh_attrs_encode(value, &b) < 0)
        return -K8S_ENOMEM;
    char *enc = k8s_buf_take(&b, NULL);
    if (!enc)
        return -K8S_ENOMEM;
    struct wh_attr *kv = find(a, key);
    if (kv) {
        free(kv->value);
        kv->value = enc;
        return 0;
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        struct wh_attr *p = realloc(a->kv, cap * sizeof(*p));
        if (!p)
            goto out_free_enc;
        a->kv = p;
        a->cap = cap;
    }
    char *k = strdup(key);
    if (!k)
        goto out_free_enc;
    a->kv[a->n++] = (struct wh_attr){k, enc};
    return 0;
out_free_enc:
    free(enc);
    return -K8S_ENOMEM;
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

int wh_attrs_parse(struct wh_attrs *a, const char *s, const char *where, json_t *warnings)
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
        if (!eq || !wh_attrs_valid_key(key)) {
            wh_warnf(warnings, "%s: resource attribute \"%.40s\" ignored (want key=value)", where,
                     key);
            continue;
        }
        r = wh_attrs_set(a, key, trim(eq + 1));
    }
    free(copy);
    return r;
}

char *wh_attrs_format(const struct wh_attrs *a)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    for (size_t i = 0; i < a->n; i++)
        if (k8s_buf_cat(&b, i ? "," : "", a->kv[i].key, "=", a->kv[i].value, NULL) < 0)
            return NULL;
    return k8s_buf_take(&b, NULL);
}

char *wh_attrs_merge_into(const char *user, const struct wh_attrs *ours)
{
    struct wh_attrs theirs;
    wh_attrs_init(&theirs);
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    char *out = NULL;
    if (wh_attrs_parse(&theirs, user, "", NULL) < 0)
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
