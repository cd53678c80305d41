#include "wh_inject.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_flags.h"
#include "k8s_jsonpatch.h"
#include "k8s_kinds.h"
#include "k8s_mlrun.h"
#include "k8s_yaml.h"
#include "wh_env.h"
#include "wh_mutate.h"
#include "wh_workload.h"

#define MAX_INPUT (64 << 20)

static const char *str_at(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* One pod or template of a document: where it is and who owns its pods. */
struct site {
    char path[256];   /* JSON Pointer within the document */
    char label[160];  /* human description for --explain */
    char parent[320]; /* "Kind/name" of the pods' controller owner; "" when generated */
};

struct job {
    const struct wh_config *cfg;
    const json_t *doc;
    const char *ns;
    time_t now;
    json_t *patch;
    struct k8s_buf *explain;
};

/* The env entry named name in container c (borrowed), or NULL. */
static const json_t *env_entry(const json_t *c, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(c, "env"), i, e)
    {
        if (str_at(e, "name") && !strcmp(str_at(e, "name"), name))
            return e;
    }
    return NULL;
}

/* One container: which of our variables it gets, which the user's own
 * take the place of, which are merged (the warnings say what is skipped). */
static int explain_container(struct k8s_buf *out, const json_t *before, const json_t *after)
{
    struct k8s_buf add, keep;
    k8s_buf_init(&add, 1 << 16);
    k8s_buf_init(&keep, 1 << 16);
    const char *merged = "";
    int r = 0;
    for (int v = 0; v < WH_ENV_COUNT && r == 0; v++) {
        const char *name = wh_env_name((enum wh_env_id)v);
        const json_t *was = env_entry(before, name), *is = env_entry(after, name);
        if (was && is && !json_equal(was, is))
            merged = name; /* only OTEL_RESOURCE_ATTRIBUTES is ever merged */
        else if (was || is)
            r = k8s_buf_cat(was ? &keep : &add, (was ? keep.len : add.len) ? ", " : "", name, NULL);
    }
    if (r == 0)
        r = k8s_buf_printf(out, "  container %s: injects %s%s%s%s%s\n", str_at(after, "name"),
                           add.len ? k8s_buf_str(&add) : "nothing",
                           keep.len ? "; keeps the user's " : "",
                           keep.len ? k8s_buf_str(&keep) : "",
                           *merged ? "; merges ours into the user's " : "", merged);
    k8s_buf_done(&add);
    k8s_buf_done(&keep);
    return r;
}

/* What each target container gets, and the ML run id its pods will share. */
static int explain_detail(struct job *j, const struct site *s, const struct wh_mutate_out *mo)
{
    json_t *patched = NULL;
    int r = 0;
    if (k8s_jsonpatch_apply(j->doc, mo->patch, &patched, NULL) < 0)
        return 0; /* explanation text is best effort */
    const char *fields[] = {"containers", "initContainers"};
    for (size_t f = 0; f < 2 && r == 0; f++) {
        char path[300];
        snprintf(path, sizeof(path), "%s/spec/%s", s->path, fields[f]);
        const json_t *was = k8s_jsonptr_get(j->doc, path), *is = k8s_jsonptr_get(patched, path);
        for (size_t i = 0; i < json_array_size(is) && r == 0; i++)
            if (!json_equal(json_array_get(was, i), json_array_get(is, i)))
                r = explain_container(j->explain, json_array_get(was, i), json_array_get(is, i));
    }
    json_decref(patched);
    char names[128];
    k8s_mlrun_names(mo->missing, false, names, sizeof(names));
    if (r == 0 && mo->run_id[0])
        r = k8s_buf_printf(j->explain, "  ML run id (rl.run.id): %s\n", mo->run_id);
    else if (r == 0)
        r = k8s_buf_printf(j->explain,
                           "  ML run id: none: the identity lacks %s; the "
                           "google-cloud-mldiagnostics SDK will refuse to start\n",
                           names);
    return r;
}

static void explain_line(struct job *j, const struct site *s, const struct wh_mutate_out *mo)
{
    if (!j->explain)
        return;
    const json_t *meta = json_object_get(j->doc, "metadata");
    int r = k8s_buf_printf(j->explain, "%s %s%s%s %s: %s: %s", str_at(j->doc, "kind"), j->ns,
                           *j->ns ? "/" : "", str_at(meta, "name") ? str_at(meta, "name") : "?",
                           s->label, mo->inject ? "inject" : "skip", mo->reason);
    if (r == 0 && mo->inject)
        r = k8s_buf_printf(j->explain, " [%d container(s), %zu operation(s)]", mo->containers,
                           json_array_size(mo->patch));
    r = r ? r : k8s_buf_appends(j->explain, "\n");
    if (r == 0 && mo->inject && json_array_size(mo->patch))
        r = explain_detail(j, s, mo);
    size_t i;
    json_t *w;
    json_array_foreach(mo->warnings, i, w) if (r == 0) r =
        k8s_buf_printf(j->explain, "  warning: %s\n", json_string_value(w));
    (void)r; /* explanation text is best effort */
}

static int run_site(struct job *j, const struct site *s, bool whole_doc)
{
    const json_t *pod = k8s_jsonptr_get(j->doc, s->path);
    struct wh_workload wl;
    struct wh_mutate_in in = {.pod = pod, .ns = j->ns, .path = s->path, .now = j->now};
    if (!whole_doc) { /* a template: the document is the workload */
        if (wh_workload_from_doc(j->doc, j->ns, s->parent, &wl) < 0)
            return -K8S_ENOMEM;
        in.workload = &wl;
    }
    struct wh_mutate_out mo;
    int r = wh_mutate(j->cfg, NULL, &in, &mo);
    if (!whole_doc)
        wh_workload_done(&wl);
    if (r < 0)
        return r;
    explain_line(j, s, &mo);
    r = json_array_extend(j->patch, mo.patch) < 0 ? -K8S_ENOMEM : 0;
    wh_mutate_out_done(&mo);
    return r;
}

/* One template at path, its pods owned by parent_kind/parent_name (no
 * owner when either is NULL). */
static int site(struct job *j, const char *path, const char *label, const char *parent_kind,
                const char *parent_name)
{
    struct site s = {0};
    snprintf(s.path, sizeof(s.path), "%s", path);
    snprintf(s.label, sizeof(s.label), "%s", label);
    if (parent_kind && parent_name)
        snprintf(s.parent, sizeof(s.parent), "%s/%s", parent_kind, parent_name);
    if (!json_is_object(k8s_jsonptr_get(j->doc, path)))
        return 0; /* optional template absent */
    return run_site(j, &s, false);
}

/* Every item (array) or member (object) at d->path holds a template. */
static int each_site(struct job *j, const struct k8s_kind_site *d, const char *parent_name)
{
    const json_t *all = k8s_jsonptr_get(j->doc, d->path);
    int r = 0;
    for (size_t i = 0; r == 0 && i < json_array_size(all); i++) {
        const json_t *g = json_array_get(all, i);
        char path[256], label[160];
        const char *gname = str_at(g, "name") ? str_at(g, "name") : str_at(g, "groupName");
        snprintf(path, sizeof(path), "%s/%zu%s", d->path, i, d->suffix);
        snprintf(label, sizeof(label), "%s[%zu] (%s)", d->label, i, gname ? gname : "");
        r = site(j, path, label, d->owner, parent_name);
    }
    const char *key;
    json_t *g;
    json_object_foreach((json_t *)all, key, g) if (r == 0)
    {
        char path[256], label[160];
        snprintf(path, sizeof(path), "%s/%s%s", d->path, key, d->suffix); /* keys are Go names */
        snprintf(label, sizeof(label), "%s[%s]", d->label, key);
        r = site(j, path, label, d->owner, parent_name);
    }
    return r;
}

/* Dispatch on kind (the kind table says where its templates are); a
 * template's pods get the parent they will have when it can be known
 * before the controller runs. */
static int by_kind(struct job *j, const char *api_version, const char *kind, const char *name)
{
    if (!strcmp(kind, "Pod"))
        return run_site(j, &(struct site){.label = "pod"}, true);
    const struct k8s_kind *k = k8s_kind_of_ref(api_version, kind);
    int r = 0;
    for (size_t i = 0; k && i < K8S_KIND_MAX_SITES && k->sites[i].path && r == 0; i++)
        r = k->sites[i].shape == K8S_SITE_ONE
                ? site(j, k->sites[i].path, k->sites[i].label, k->sites[i].owner, name)
                : each_site(j, &k->sites[i], name);
    if ((!k || !k->sites[0].path) && j->explain)
        return k8s_buf_printf(j->explain,
                              "%s %s%s%s: skip: kind %s has no pod template we inject\n", kind,
                              j->ns, *j->ns ? "/" : "", name, kind);
    return r;
}

static int inject_list(const struct wh_config *cfg, const json_t *doc, const char *ns, time_t now,
                       json_t *patch, struct k8s_buf *explain)
{
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(doc, "items"), i, item)
    {
        json_t *sub = NULL;
        int r = wh_inject_doc(cfg, item, ns, now, &sub, explain);
        if (r < 0)
            return r;
        size_t k;
        json_t *op;
        json_array_foreach(sub, k, op)
        { /* re-root each operation under /items/<i> */
            char path[1024];
            snprintf(path, sizeof(path), "/items/%zu%s", i, str_at(op, "path"));
            json_object_set_new(op, "path", json_string(path));
        }
        r = json_array_extend(patch, sub) < 0 ? -K8S_ENOMEM : 0;
        json_decref(sub);
        if (r < 0)
            return r;
    }
    return 0;
}

int wh_inject_doc(const struct wh_config *cfg, const json_t *doc, const char *ns, time_t now,
                  json_t **ret_patch, struct k8s_buf *explain)
{
    json_t *patch = json_array();
    if (!patch)
        return -K8S_ENOMEM;
    const char *kind = str_at(doc, "kind") ? str_at(doc, "kind") : "";
    const json_t *meta = json_object_get(doc, "metadata");
    const char *doc_ns = str_at(meta, "namespace");
    const char *name = str_at(meta, "name") ? str_at(meta, "name") : "";
    struct job j = {.cfg = cfg,
                    .doc = doc,
                    .ns = doc_ns && *doc_ns ? doc_ns
                          : ns              ? ns
                                            : "",
                    .now = now,
                    .patch = patch,
                    .explain = explain};
    int r = !strcmp(kind, "List") ? inject_list(cfg, doc, ns, now, patch, explain)
                                  : by_kind(&j, str_at(doc, "apiVersion"), kind, name);
    if (r < 0) {
        json_decref(patch);
        return -K8S_ENOMEM;
    }
    *ret_patch = patch;
    return 0;
}

/* ---------- the command ---------- */

struct opts {
    const char *file;
    bool patch, explain;
    const char *ns;
    struct wh_config cfg; /* the injection settings of serve that apply */
};

static int read_input(const char *file, char **ret, size_t *ret_len, struct k8s_error *err)
{
    if (strcmp(file, "-"))
        return k8s_read_file(file, MAX_INPUT, ret, ret_len, err);
    struct k8s_buf b;
    k8s_buf_init(&b, MAX_INPUT);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
        if (k8s_buf_append(&b, chunk, n) < 0)
            return k8s_error_set(err, -K8S_ETOOBIG, "stdin: input larger than %d bytes", MAX_INPUT);
    *ret = k8s_buf_take(&b, ret_len);
    return *ret ? 0 : k8s_error_set(err, -K8S_ENOMEM, "out of memory");
}

/* JSON input: one or more concatenated values. */
static int load_json_docs(const char *buf, size_t len, json_t **ret, struct k8s_error *err)
{
    json_t *docs = json_array();
    size_t off = 0;
    while (docs && off < len) {
        while (off < len && strchr(" \t\r\n", buf[off]))
            off++;
        if (off == len)
            break;
        json_error_t je;
        json_t *d = json_loadb(buf + off, len - off, JSON_DISABLE_EOF_CHECK, &je);
        if (!d) {
            json_decref(docs);
            return k8s_error_set(err, -K8S_EPARSE, "json: line %d column %d: %s", je.line,
                                 je.column, je.text);
        }
        json_array_append_new(docs, d);
        off += je.position;
    }
    *ret = docs;
    return docs ? 0 : -K8S_ENOMEM;
}

static int emit_doc(const json_t *doc, bool json, size_t index, struct k8s_buf *out)
{
    if (!json) {
        struct k8s_error err;
        int r = index ? k8s_buf_appends(out, "---\n") : 0;
        return r ? r : k8s_yaml_dump(doc, out, &err);
    }
    char *s = json_dumps(doc, JSON_INDENT(2));
    int r = s ? k8s_buf_appends(out, s) : -K8S_ENOMEM;
    free(s);
    return r ? r : k8s_buf_appends(out, "\n");
}

static int process(const struct wh_config *cfg, const struct opts *o, json_t *docs, bool json,
                   struct k8s_buf *out)
{
    size_t i;
    json_t *doc;
    const char *epoch = getenv("SOURCE_DATE_EPOCH"); /* reproducible renders */
    time_t now = epoch ? (time_t)strtoll(epoch, NULL, 10) : time(NULL);
    json_array_foreach(docs, i, doc)
    {
        json_t *patch = NULL, *mutated = NULL;
        struct k8s_error err;
        int r = wh_inject_doc(cfg, doc, o->ns, now, &patch, o->explain ? out : NULL);
        if (r == 0 && o->patch) {
            char *s = json_dumps(patch, JSON_COMPACT);
            r = s ? k8s_buf_printf(out, "%s\n", s) : -K8S_ENOMEM;
            free(s);
        } else if (r == 0 && !o->explain) {
            r = k8s_jsonpatch_apply(doc, patch, &mutated, &err);
            r = r ? r : emit_doc(mutated, json, i, out);
        }
        json_decref(patch);
        json_decref(mutated);
        if (r < 0)
            return r;
    }
    return 0;
}

#define AT(member) K8S_FLAG_AT(struct opts, member)

static const struct k8s_flag flags[] = {
    {"f", K8S_FLAG_STRING, AT(file), "input file, - for stdin"},
    {"filename", K8S_FLAG_STRING, AT(file), "same as -f"},
    {"patch", K8S_FLAG_BOOL, AT(patch), "print the RFC 6902 patch of each document"},
    {"explain", K8S_FLAG_BOOL, AT(explain), "print why each pod is or is not injected"},
    {"n", K8S_FLAG_STRING, AT(ns), "namespace for documents that name none"},
    {"namespace", K8S_FLAG_STRING, AT(ns), "same as -n"},
    {"cluster-name", K8S_FLAG_STRING, AT(cfg.cluster_name), "cluster name"},
    {"otel-collector-name", K8S_FLAG_STRING, AT(cfg.otel_collector_name), "OTEL_COLLECTOR_NAME"},
    {"otel-collector-namespace", K8S_FLAG_STRING, AT(cfg.otel_collector_namespace),
     "OTEL_COLLECTOR_NAMESPACE"},
    {"skip-containers", K8S_FLAG_STRING, AT(cfg.skip_containers_flag),
     "containers never injected, comma-separated"},
    {NULL},
};

static void opts_init(struct opts *o)
{
    *o = (struct opts){0};
    wh_config_init(&o->cfg);
}

static int parse_opts(struct opts *o, int argc, char **argv, int argi, struct k8s_error *err)
{
    struct opts dflt;
    opts_init(&dflt);
    int r = k8s_flags_command(
        flags, o, &dflt,
        "Usage: mldiagnostics-webhook inject -f FILE|- [--patch|--explain] [flags]\n", argc, argv,
        argi, err);
    if (r == 0 && !o->file)
        r = k8s_error_set(err, -K8S_EINVAL, "missing -f FILE (use - for stdin)");
    if (r == 0 && o->patch && o->explain)
        r = k8s_error_set(err, -K8S_EINVAL, "--patch and --explain are exclusive");
    return r ? r : wh_config_finish(&o->cfg, err);
}

int wh_inject_main(int argc, char **argv, int argi)
{
    struct opts o;
    struct k8s_error err = {0};
    char *buf = NULL;
    size_t len = 0;
    json_t *docs = NULL;
    struct k8s_buf out;
    k8s_buf_init(&out, (size_t)1 << 31);
    opts_init(&o);
    int r = parse_opts(&o, argc, argv, argi, &err);
    if (r == 1) {
        wh_config_done(&o.cfg);
        return 0;
    }
    bool json = false;
    if (r == 0)
        r = read_input(o.file, &buf, &len, &err);
    if (r == 0) {
        json = k8s_yaml_looks_like_json(buf, len);
        r = json ? load_json_docs(buf, len, &docs, &err) : k8s_yaml_load_all(buf, len, &docs, &err);
    }
    if (r == 0 && (r = process(&o.cfg, &o, docs, json, &out)) < 0)
        k8s_error_set(&err, r, "%s", k8s_strerror(r));
    if (r == 0)
        fwrite(out.data ? out.data : "", 1, out.len, stdout);
    else
        fprintf(stderr, "mldiagnostics-webhook inject: %s: %s\n", o.file ? o.file : "",
                err.message);
    k8s_buf_done(&out);
    json_decref(docs);
    free(buf);
    wh_config_done(&o.cfg);
    return r == 0 ? 0 : r == -K8S_EINVAL ? 2 : 1;
}
