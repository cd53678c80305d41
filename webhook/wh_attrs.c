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

/* Written as it is: a W3C baggage value octet, except the three that
 * would change what the process reads ('%', '=', '$'). */
static bool plain_octet(unsigned char c)
{
    bool baggage = c == 0x21 || (c >= 0x23 && c <= 0x2B) || (c >= 0x2D && c <= 0x3A) ||
                   (c >= 0x3C && c <= 0x5B) || (c >= 0x5D && c <= 0x7E);
    return baggage && c != '%' && c != '=' && c != '$';
}

int wh_attrs_encode(const char *v, struct k8s_buf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    int r = 0;
    for (const unsigned char *p = (const unsigned char *)v; *p && r == 0; p++) {
        const unsigned char *run = p; /* a run of plain octets in one append */
        while (plain_octet(*p))
            p++;
        r = p > run ? k8s_buf_append(out, run, (size_t)(p - run)) : 0;
        if (!*p)
            break;
        r = r ? r : k8s_buf_append(out, (char[]){'%', hex[*p >> 4], hex[*p & 15]}, 3);
    }
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

/* Store key=value (both taken: freed on failure). */
static int store(struct wh_attrs *a, char *key, char *value)
{
    struct wh_attr *kv = key && value ? find(a, key) : NULL;
    if (kv) {
        free(key);
        free(kv->value);
        kv->value = value;
        return 0;
    }
    if (key && value && a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        struct wh_attr *p = realloc(a->kv, cap * sizeof(*p));
        if (p) {
            a->kv = p;
            a->cap = cap;
        }
    }
    if (!key || !value || a->n == a->cap) {
        free(key);
        free(value);
        return -K8S_ENOMEM;
    }
    a->kv[a->n++] = (struct wh_attr){key, value};
    return 0;
}

static char *encoded(const char *s)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    return wh_attrs_encode(s, &b) < 0 ? NULL : k8s_buf_take(&b, NULL);
}

int wh_attrs_set(struct wh_attrs *a, const char *key, const char *value)
{
    return store(a, encoded(key), encoded(value));
}

int wh_attrs_put(struct wh_attrs *a, const char *key, const char *value)
{
    return store(a, strdup(key), strdup(value));
}

int wh_attrs_set_ref(struct wh_attrs *a, const char *key, const char *var)
{
    char *ref = NULL;
    if (asprintf(&ref, "$(%s)", var) < 0)
        ref = NULL;
    return store(a, encoded(key), ref);
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
