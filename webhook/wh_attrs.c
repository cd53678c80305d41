#include "wh_attrs.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wh_warn.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

void wh_attrs_init(struct wh_attrs *a)
{
    memset(a, 0, sizeof(*a));
}

void wh_attrs_done(struct wh_attrs *a)
{
    if (!a)
        return;
    free(a->kv); /* the set's one block: pairs and text */
    memset(a, 0, sizeof(*a));
}

/* 1 for an octet written as it is: a W3C baggage value octet (0x21,
 * 0x23-0x2B, 0x2D-0x3A, 0x3C-0x5B, 0x5D-0x7E), except the three that would
 * change what the process reads ('$' 0x24, '%' 0x25, '=' 0x3D). */
static const unsigned char plain[256] = {
    [0x21] = 1, [0x23] = 1,          [0x26 ... 0x2B] = 1, [0x2D ... 0x3A] = 1,
    [0x3C] = 1, [0x3E ... 0x5B] = 1, [0x5D ... 0x7E] = 1,
};

#ifdef __SSE2__
/* Bits of the 16 octets at p that are not plain. */
static unsigned not_plain16(const unsigned char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)p);
    /* outside 0x21..0x7E: x + 0x5F, read signed, above 0xDD (-35) */
    __m128i bad = _mm_cmpgt_epi8(_mm_add_epi8(x, _mm_set1_epi8(0x5F)), _mm_set1_epi8(-35));
    static const char odd[] = {'"', '$', '%', ',', ';', '=', '\\'};
    for (size_t i = 0; i < sizeof(odd); i++)
        bad = _mm_or_si128(bad, _mm_cmpeq_epi8(x, _mm_set1_epi8(odd[i])));
    return (unsigned)_mm_movemask_epi8(bad);
}
#endif

/* Whether all n octets at s are plain: the common case, copied at once. */
static bool all_plain(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
#ifdef __SSE2__
    if (n >= 16) {
        for (; i + 16 <= n; i += 16)
            if (not_plain16(p + i))
                return false;
        return i == n || !not_plain16(p + n - 16); /* the tail, overlapping */
    }
#endif
    unsigned ok = 1;
    for (; i < n; i++)
        ok &= plain[p[i]];
    return ok;
}

/* The n octets of s encoded at t ("%XX" for each not plain), or as they
 * are; t has room for 3n. Returns the end. */
static char *write_text(char *t, const char *s, size_t n, bool encode)
{
    static const char hex[] = "0123456789ABCDEF";
    if (!encode || all_plain(s, n)) {
        memcpy(t, s, n);
        return t + n;
    }
    for (const unsigned char *p = (const unsigned char *)s, *end = p + n; p < end; p++) {
        if (plain[*p]) {
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
    size_t n = strlen(v), m = 0;
    if (all_plain(v, n))
        return k8s_buf_append(out, v, n);
    for (size_t i = 0; i < n; i++) /* exactly: the buffer's cap may be near */
        m += plain[(unsigned char)v[i]] ? 1 : 3;
    char *t;
    int r = k8s_buf_reserve(out, m, &t);
    if (r == 0)
        k8s_buf_commit(out, (size_t)(write_text(t, v, n, true) - t));
    return r;
}

static struct wh_attr *find(const struct wh_attrs *a, const char *key, size_t n)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->kv[i].key_len == n && !memcmp(a->kv[i].key, key, n))
            return &a->kv[i];
    return NULL;
}

const char *wh_attrs_get(const struct wh_attrs *a, const char *key)
{
    struct wh_attr *kv = find(a, key, strlen(key));
    return kv ? kv->value : NULL;
}

bool wh_attrs_has_prefix(const struct wh_attrs *a, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i < a->n; i++)
        if (a->kv[i].key_len >= n && (!n || a->kv[i].key[0] == prefix[0]) &&
            !memcmp(a->kv[i].key, prefix, n))
            return true;
    return false;
}

/* Make room for one more pair and `text` more bytes of text: a new block
 * (pairs copied, their pointers moved with them) when the old one is
 * short. The set is as it was on failure. */
static int room_for(struct wh_attrs *a, size_t text)
{
    if (a->n < a->cap && text <= a->room - a->used)
        return 0;
    size_t cap = a->cap ? a->cap : 16, room = a->room ? a->room : 768;
    cap = a->n < cap ? cap : cap * 2;
    while (room - a->used < text) {
        if (room > (SIZE_MAX - text) / 2)
            return -K8S_ENOMEM;
        room *= 2;
    }
    struct wh_attr *kv = malloc(cap * sizeof(*kv) + room);
    if (!kv)
        return -K8S_ENOMEM;
    char *t = (char *)(kv + cap);
    if (a->used)
        memcpy(t, a->text, a->used);
    for (size_t i = 0; i < a->n; i++) {
        kv[i] = a->kv[i];
        kv[i].key = t + (a->kv[i].key - a->text);
        kv[i].value = t + (a->kv[i].value - a->text);
    }
    free(a->kv);
    *a = (struct wh_attrs){kv, a->n, cap, t, a->used, room};
    return 0;
}

/* Set key (encoded or as it is) to the concatenation of the value parts
 * (likewise), written straight into the set's text; the pair of that key
 * is replaced in place, else the pair goes last. */
static int store(struct wh_attrs *a, const char *key, bool encode_key, size_t nparts,
                 const char *const value[], bool encode_value)
{
    size_t klen = strlen(key), vlen[3], most = 0;
    for (size_t i = 0; i < nparts; i++)
        most += (vlen[i] = strlen(value[i]));
    if (klen > SIZE_MAX / 4 || most > SIZE_MAX / 4 - klen)
        return -K8S_ENOMEM;
    most = (encode_key ? 3 * klen : klen) + (encode_value ? 3 * most : most) + 2;
    int r = room_for(a, most);
    if (r < 0)
        return r;
    char *k = a->text + a->used, *t = write_text(k, key, klen, encode_key), *v = t + 1;
    *t = '\0';
    t = v;
    for (size_t i = 0; i < nparts; i++)
        t = write_text(t, value[i], vlen[i], encode_value);
    *t = '\0';
    a->used = (size_t)(t + 1 - a->text);
    struct wh_attr pair = {k, v, (size_t)(v - 1 - k), (size_t)(t - v)};
    struct wh_attr *kv = find(a, k, pair.key_len);
    *(kv ? kv : &a->kv[a->n++]) = pair; /* the old pair's text stays, unused */
    return 0;
}

int wh_attrs_set(struct wh_attrs *a, const char *key, const char *value)
{
    return store(a, key, true, 1, &value, true);
}

int wh_attrs_put(struct wh_attrs *a, const char *key, const char *value)
{
    return store(a, key, false, 1, &value, false);
}

int wh_attrs_set_ref(struct wh_attrs *a, const char *key, const char *var)
{
    return store(a, key, true, 3, (const char *const[]){"$(", var, ")"}, false);
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
        n += a->kv[i].key_len + a->kv[i].value_len + 2;
    char *t, *start;
    int r = k8s_buf_reserve(out, n, &start);
    if (r < 0)
        return r;
    t = start;
    for (size_t i = 0; i < a->n; i++) {
        *t = ',';
        t += i > 0;
        memcpy(t, a->kv[i].key, a->kv[i].key_len);
        t += a->kv[i].key_len;
        *t++ = '=';
        memcpy(t, a->kv[i].value, a->kv[i].value_len);
        t += a->kv[i].value_len;
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
