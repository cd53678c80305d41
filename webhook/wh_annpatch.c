#include "wh_annpatch.h"

#include <string.h>

#include "k8s_buf.h"
#include "k8s_json.h"
#include "wh_warn.h"

enum change { KEEP, ADD, REPLACE };

/* "key":"value", after a ',' unless first. */
static int member(struct k8s_buf *b, bool first, const char *k, size_t klen, const char *v)
{
    int r = first ? 0 : k8s_buf_append(b, ",", 1);
    r = r ? r : k8s_json_write_string(k, klen, b);
    r = r ? r : k8s_buf_append(b, ":", 1);
    return r ? r : k8s_json_write_string(v, strlen(v), b);
}

/* {ours...}: the annotations of a pod that has none. */
static int write_set(struct k8s_buf *b, const struct wh_ann *set, size_t n)
{
    int r = k8s_buf_append(b, "{", 1);
    for (size_t i = 0; i < n && r == 0; i++)
        r = member(b, i == 0, set[i].key, strlen(set[i].key), set[i].value);
    return r ? r : k8s_buf_append(b, "}", 1);
}

/* Every value of m a string (so m can be written back whole)? */
static bool all_strings(const struct wh_map *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (!m->kv[i].val)
            return false;
    return true;
}

/* The value entry e ends with: ours where it is replaced. */
static const char *value_of(const struct wh_kv *e, const struct wh_ann *set, const enum change ch[],
                            size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (ch[k] == REPLACE && !strcmp(e->key, set[k].key))
            return set[k].value;
    return e->val;
}

/* {"op":"add","path":"<pod>/metadata/annotations","value":{...}} */
static int write_whole(const struct wh_map *ann, const char *pod_path, const struct wh_ann *set,
                       const enum change ch[], size_t n, struct k8s_jsonpatch_text *patch)
{
    struct k8s_buf *b = &patch->buf;
    int r = k8s_jsonpatch_text_begin_at(patch, "add", pod_path, "/metadata/annotations", NULL);
    r = r ? r : k8s_buf_append(b, "{", 1);
    bool first = true;
    for (size_t i = 0; i < ann->n && r == 0; i++) {
        const struct wh_kv *e = &ann->kv[i];
        if (wh_map_find(ann, e->key) != e) /* a duplicate the document overrides */
            continue;
        r = member(b, first, e->key, e->klen, value_of(e, set, ch, n));
        first = false;
    }
    for (size_t k = 0; k < n && r == 0; k++)
        if (ch[k] == ADD) {
            r = member(b, first, set[k].key, strlen(set[k].key), set[k].value);
            first = false;
        }
    r = r ? r : k8s_buf_append(b, "}", 1);
    return r ? r : k8s_jsonpatch_text_end(patch);
}

/* One operation per change (a value of the pod's is not a string). */
static int write_each(const char *pod_path, const struct wh_ann *set, const enum change ch[],
                      size_t n, struct k8s_jsonpatch_text *patch)
{
    int r = 0;
    for (size_t k = 0; k < n && r == 0; k++) {
        if (ch[k] == KEEP)
            continue;
        r = k8s_jsonpatch_text_begin_at(patch, ch[k] == ADD ? "add" : "replace", pod_path,
                                        "/metadata/annotations", set[k].key);
        r = r ? r : k8s_json_write_string(set[k].value, strlen(set[k].value), &patch->buf);
        r = r ? r : k8s_jsonpatch_text_end(patch);
    }
    return r;
}

int wh_annpatch(const struct wh_meta *meta, const char *pod_path, const struct wh_ann *set,
                size_t n, struct k8s_jsonpatch_text *patch, json_t *warnings)
{
    const struct wh_map *ann = &meta->annotations;
    bool has_meta = meta->shape == WH_SHAPE_LIST;
    if (!has_meta || ann->shape == WH_SHAPE_ABSENT || ann->shape == WH_SHAPE_NULL) {
        struct k8s_buf *b = &patch->buf;
        int r = k8s_jsonpatch_text_begin_at(patch, "add", pod_path, "/metadata",
                                            has_meta ? "annotations" : NULL);
        r = r || has_meta ? r : k8s_buf_appends(b, "{\"annotations\":");
        r = r ? r : write_set(b, set, n);
        r = r || has_meta ? r : k8s_buf_append(b, "}", 1);
        return r ? r : k8s_jsonpatch_text_end(patch);
    }
    if (ann->shape != WH_SHAPE_LIST) {
        wh_warnf(warnings, "metadata.annotations is not a map; pod annotations not set");
        return 0;
    }
    enum change ch[WH_ANN_MAX];
    bool any = false;
    for (size_t k = 0; k < n && k < WH_ANN_MAX; k++) {
        const struct wh_kv *cur = wh_map_find(ann, set[k].key);
        ch[k] = !cur                                                              ? ADD
                : set[k].refresh && (!cur->val || strcmp(cur->val, set[k].value)) ? REPLACE
                                                                                  : KEEP;
        any |= ch[k] != KEEP;
    }
    n = n < WH_ANN_MAX ? n : WH_ANN_MAX;
    if (!any)
        return 0;
    return all_strings(ann) ? write_whole(ann, pod_path, set, ch, n, patch)
                            : write_each(pod_path, set, ch, n, patch);
}
