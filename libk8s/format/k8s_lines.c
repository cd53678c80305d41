#include "k8s_lines.h"

#include <string.h>

void k8s_lines_init(struct k8s_lines *l, size_t max_line)
{
    k8s_buf_init(&l->partial, max_line);
}

void k8s_lines_done(struct k8s_lines *l)
{
    if (l)
        k8s_buf_done(&l->partial);
}

size_t k8s_lines_pending(const struct k8s_lines *l)
{
    return l->partial.len;
}

static int deliver(const char *line, size_t len, k8s_lines_fn fn, void *ud)
{
    if (len == 0 || (len == 1 && line[0] == '\r'))
        return 0;
    return fn(ud, line, len) ? 1 : 0;
}

int k8s_lines_feed(struct k8s_lines *l, const char *data, size_t n, k8s_lines_fn fn, void *ud)
{
    const char *p = data, *end = data + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) /* keep the unfinished tail for the next feed */
            return k8s_buf_append(&l->partial, p, (size_t)(end - p));
        int r;
        if (l->partial.len) { /* a line spanning feeds */
            r = k8s_buf_append(&l->partial, p, (size_t)(nl - p));
            if (r < 0)
                return r;
            r = deliver(l->partial.data, l->partial.len, fn, ud);
            k8s_buf_reset(&l->partial);
        } else {
            if ((size_t)(nl - p) > l->partial.max)
                return -K8S_ETOOBIG;
            r = deliver(p, (size_t)(nl - p), fn, ud);
        }
        if (r)
            return r;
        p = nl + 1;
    }
    return 0;
}
