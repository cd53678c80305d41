/*
 * libFuzzer target: the filtered JSON reader against jansson. With no
 * filter both must accept exactly the same documents and build equal
 * values; the admission's reader (wh_review_decode, all pull readers) must
 * never accept a document that is malformed for any reason other than a
 * number out of range in a member it skips (those are checked for syntax
 * only, by design) nor refuse valid JSON as malformed, and the pod it reads
 * (metadata and spec) must be the one jansson's tree holds.
 *
 * One jansson quirk is no finding: jansson 2.14 drops a NUL byte that
 * directly follows a number or a literal ("[1\0]" loads as [1], "[null\0]"
 * as [null]; its lexer ungets the NUL,
 * which its stream buffer takes for "empty"). RFC 8259 allows a NUL neither
 * outside strings nor in them, so for such input jansson is no oracle and
 * the reader must refuse it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jsonload.h"
#include "wh_review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A podspec as text: both readers must give the same. */
static void put(FILE *f, const char *s)
{
    fprintf(f, s ? "\"%s\"" : "-", s);
}

static void dump_map(FILE *f, const struct wh_map *m)
{
    size_t n;
    struct wh_kv *kv = wh_map_ordered(m, &n);
    if (!kv)
        abort();
    fprintf(f, "|%d:", m->shape);
    for (size_t i = 0; i < n; i++)
        put(f, kv[i].key), put(f, kv[i].val);
    free(kv);
}

static void dump_meta(FILE *f, const struct wh_meta *m)
{
    fprintf(f, "meta%d", m->shape);
    const char *const v[] = {m->name,    m->generate_name, m->ns,
                             m->created, m->owner_kind,    m->owner_name};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        put(f, v[i]);
    dump_map(f, &m->labels);
    dump_map(f, &m->annotations);
}

static char *dump(const struct wh_pod *pod)
{
    const struct wh_podspec *s = &pod->spec;
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    fprintf(f, "pod%d ", pod->shape);
    dump_meta(f, &pod->meta);
    fprintf(f, " spec%d", s->shape);
    for (int l = 0; l < WH_NLISTS; l++) {
        fprintf(f, "|%d:", s->list[l].shape);
        for (size_t i = 0; i < s->list[l].n; i++) {
            const struct wh_container *c = &s->list[l].c[i];
            fprintf(f, "{%d ", c->is_object);
            put(f, c->name);
            put(f, c->restart_policy);
            fprintf(f, " env%d:", c->env_shape);
            for (size_t e = 0; e < c->n_env; e++) {
                put(f, c->env[e].name);
                put(f, c->env[e].value);
                fprintf(f, "%zu,%zu,%d;", c->env[e].len, c->env[e].vlen, c->env[e].value_from);
            }
            fprintf(f, " m%d:", c->mounts_shape);
            for (size_t m = 0; m < c->n_mounts; m++)
                put(f, c->mounts[m].name), put(f, c->mounts[m].mount_path);
            fprintf(f, "}");
        }
    }
    fprintf(f, "|v%d:", s->volumes_shape);
    for (size_t i = 0; i < s->n_volumes; i++)
        put(f, s->volumes[i]);
    fclose(f);
    return out;
}

/* The pod read in the review's pass equals the one read from jansson's tree. */
static void same_pod(const json_t *doc, const struct wh_pod *pulled)
{
    struct wh_pod tree;
    if (wh_pod_from_json(json_object_get(json_object_get(doc, "request"), "object"), &tree) < 0)
        return;
    char *a = dump(pulled), *b = dump(&tree);
    if (strcmp(a, b)) {
        fprintf(stderr, "pulled pod %s\n  tree pod %s\n", a, b);
        abort();
    }
    free(a);
    free(b);
    wh_pod_done(&tree);
}

/* A NUL right after a number or a literal (true, false, null). */
static bool nul_after_token(const uint8_t *data, size_t size)
{
    for (size_t i = 1; i < size; i++)
        if (!data[i] && ((data[i - 1] >= '0' && data[i - 1] <= '9') || data[i - 1] == 'e' ||
                         data[i - 1] == 'l'))
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *want =
        nul_after_token(data, size) ? NULL : json_loadb((const char *)data, size, 0, NULL);
    json_t *got = NULL;
    struct k8s_error err;
    int r = k8s_json_load_filtered((const char *)data, size, NULL, &got, &err);
    if ((want != NULL) != (r == 0))
        abort();
    if (want && !json_equal(want, got))
        abort();
    bool range_only = r != 0 && (strstr(err.message, "too big integer") ||
                                 strstr(err.message, "real number overflow"));
    struct k8s_error ferr;
    struct wh_review rv;
    int f = wh_review_decode((const char *)data, size, NULL, &rv, &ferr);
    if (f == 0 && want)
        same_pod(want, &rv.pod);
    if (f == 0)
        wh_review_done(&rv);
    bool parsed = f == 0 || f == -K8S_EINVAL; /* JSON, if not a review */
    if (parsed && r != 0 && !range_only)      /* skipped members: only ranges go unchecked */
        abort();
    if (want && !parsed) /* valid JSON refused as malformed */
        abort();
    json_decref(want);
    json_decref(got);
    return 0;
}
