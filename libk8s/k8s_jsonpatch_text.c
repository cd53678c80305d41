#include "k8s_jsonpatch_text.h"

#include <string.h>

#include "k8s_json.h"

#define PATCH_MAX ((size_t)1 << 28) /* as the review's response writer */

void k8s_jsonpatch_text_init(struct k8s_jsonpatch_text *t)
{
    memset(t, 0, sizeof(*t));
    k8s_buf_init(&t->buf, PATCH_MAX);
}

void k8s_jsonpatch_text_done(struct k8s_jsonpatch_text *t)
{
    if (!t)
        return;
    k8s_buf_done(&t->buf);
    t->n = 0;
    t->at = 0;
    t->closed = 0;
}

/* Reopen the array for another operation. */
static int reopen(struct k8s_jsonpatch_text *t)
{
    if (t->closed) {
        t->buf.len--;
        t->buf.data[t->buf.len] = '\0';
        t->closed = 0;
    }
    if (t->buf.len == 0) {
        char *tail; /* the typical patch, a few KiB, in one allocation */
        int r = k8s_buf_reserve(&t->buf, 8192, &tail);
        r = r ? r : k8s_buf_append(&t->buf, "[", 1);
        if (r)
            return r;
    }
    int r = t->n ? k8s_buf_append(&t->buf, ",", 1) : 0;
    t->at = t->buf.len;
    return r;
}

int k8s_jsonpatch_text_open(struct k8s_jsonpatch_text *t, const char *op)
{
    int r = reopen(t);
    r = r ? r : k8s_buf_append(&t->buf, "{\"op\":", 6);
    r = r ? r : k8s_json_write_string(op, strlen(op), &t->buf);
    return r ? r : k8s_buf_append(&t->buf, ",\"path\":\"", 9);
}

int k8s_jsonpatch_text_open_as(struct k8s_jsonpatch_text *t, size_t at, size_t len)
{
    size_t end = t->buf.len - (t->closed ? 1 : 0); /* without the "]" */
    if (at > end || len > end - at)
        return -K8S_EINVAL;
    char *tail;
    int r = reopen(t);
    r = r ? r : k8s_buf_reserve(&t->buf, len, &tail);
    if (r == 0) {
        memcpy(tail, t->buf.data + at, len); /* the data as it is after the reservation */
        k8s_buf_commit(&t->buf, len);
    }
    return r;
}

int k8s_jsonpatch_text_path(struct k8s_jsonpatch_text *t, const char *ptr, size_t n)
{
    return k8s_json_write_chars(ptr, n, &t->buf);
}

int k8s_jsonpatch_text_path_seg(struct k8s_jsonpatch_text *t, const char *seg)
{
    int r = k8s_buf_append(&t->buf, "/", 1);
    for (const char *run = seg; r == 0; run++) {
        size_t n = strcspn(run, "~/");
        r = k8s_json_write_chars(run, n, &t->buf);
        if (r < 0 || !run[n])
            break;
        run += n;
        r = k8s_buf_append(&t->buf, *run == '~' ? "~0" : "~1", 2);
    }
    return r;
}

int k8s_jsonpatch_text_path_index(struct k8s_jsonpatch_text *t, size_t i)
{
    if (i == K8S_JSONPATCH_TEXT_END)
        return k8s_buf_append(&t->buf, "/-", 2);
    int r = k8s_buf_append(&t->buf, "/", 1);
    return r ? r : k8s_buf_append_int(&t->buf, (long long)i);
}

int k8s_jsonpatch_text_value(struct k8s_jsonpatch_text *t)
{
    return k8s_buf_append(&t->buf, "\",\"value\":", 10);
}

int k8s_jsonpatch_text_begin(struct k8s_jsonpatch_text *t, const char *op, const char *path)
{
    int r = k8s_jsonpatch_text_open(t, op);
    r = r ? r : k8s_jsonpatch_text_path(t, path, strlen(path));
    return r ? r : k8s_jsonpatch_text_value(t);
}

int k8s_jsonpatch_text_end(struct k8s_jsonpatch_text *t)
{
    t->n++;
    return k8s_buf_append(&t->buf, "}", 1);
}

int k8s_jsonpatch_text_string(struct k8s_jsonpatch_text *t, const char *op, const char *path,
                              const char *value)
{
    int r = k8s_jsonpatch_text_begin(t, op, path);
    r = r ? r : k8s_json_write_string(value, strlen(value), &t->buf);
    return r ? r : k8s_jsonpatch_text_end(t);
}

const char *k8s_jsonpatch_text_json(struct k8s_jsonpatch_text *t, size_t *ret_len)
{
    if (!t->closed) {
        int r = t->buf.len ? 0 : k8s_buf_append(&t->buf, "[", 1);
        if (r || k8s_buf_append(&t->buf, "]", 1))
            return NULL;
        t->closed = 1;
    }
    *ret_len = t->buf.len;
    return t->buf.data;
}

json_t *k8s_jsonpatch_text_tree(struct k8s_jsonpatch_text *t)
{
    size_t len;
    const char *s = k8s_jsonpatch_text_json(t, &len);
    return s ? json_loadb(s, len, JSON_ALLOW_NUL, NULL) : NULL;
}
