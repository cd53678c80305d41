#include "k8s_buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void k8s_buf_init(struct k8s_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    b->max = max;
}

void k8s_buf_done(struct k8s_buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
}

void k8s_buf_reset(struct k8s_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void k8s_buf_consume(struct k8s_buf *b, size_t n)
{
    if (n >= b->len) {
        k8s_buf_done(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

static int grow(struct k8s_buf *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra) {
        k8s_buf_done(b);
        return -K8S_ETOOBIG;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->alloc)
        return 0;
    size_t n = b->alloc ? b->alloc : 256;
    while (n < need)
        n *= 2;
    char *p = realloc(b->data, n);
    if (!p) {
        k8s_buf_done(b);
        return -K8S_ENOMEM;
    }
    b->data = p;
    b->alloc = n;
    return 0;
}

int k8s_buf_append_slow(struct k8s_buf *b, const void *p, size_t n)
{
    int r = grow(b, n);
    if (r < 0)
        return r;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

char *k8s_put_int(char *t, long long v)
{
    char d[K8S_INT_CHARS], *p = d + sizeof(d);
    unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *t++ = '-';
    return k8s_put(t, p, (size_t)(d + sizeof(d) - p));
}

int k8s_buf_append_int(struct k8s_buf *b, long long v)
{
    char d[K8S_INT_CHARS];
    return k8s_buf_append(b, d, (size_t)(k8s_put_int(d, v) - d));
}

int k8s_buf_printf(struct k8s_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        k8s_buf_done(b);
        return -K8S_EINVAL;
    }
    int r = grow(b, (size_t)n);
    if (r < 0)
        return r;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int k8s_buf_reserve_slow(struct k8s_buf *b, size_t n, char **ret_tail)
{
    int r = grow(b, n);
    if (r < 0)
        return r;
    *ret_tail = b->data + b->len;
    return 0;
}

char *k8s_buf_take(struct k8s_buf *b, size_t *ret_len)
{
    char *p = b->data;
    size_t len = b->len;
    if (!p) {
        p = strdup("");
        len = 0;
    }
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    if (p && ret_len)
        *ret_len = len;
    return p;
}

const char *k8s_buf_str(const struct k8s_buf *b)
{
    return b->data ? b->data : "";
}

int k8s_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len,
                  struct k8s_error *reterr)
{
    FILE *f = fopen(path, "rbe");
    if (!f)
        return k8s_error_set(reterr, -K8S_EIO, "%s: %s", path, strerror(errno));
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
    int err = ferror(f);
    fclose(f);
    if (!buf)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    if (err || n > max) {
        free(buf);
        return k8s_error_set(reterr, err ? -K8S_EIO : -K8S_ETOOBIG, "%s: %s", path,
                             err ? "read error" : "file too large");
    }
    buf[n] = '\0';
    *ret_buf = buf;
    *ret_len = n;
    return 0;
}
