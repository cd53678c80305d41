#include "k8s_yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define CORE_TAG "tag:yaml.org,2002:"
#define DIGITS   "0123456789"

/* ---------- scalar resolution ---------- */

enum kind { K_ANY, K_STR, K_NULL, K_BOOL, K_INT, K_REAL, K_NONFINITE };

struct scalar {
    enum kind kind;
    json_int_t i;
    double d;
};

static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
static const char *const trues[] = {"true", "True", "TRUE", NULL};
static const char *const falses[] = {"false", "False", "FALSE", NULL};
static const char *const nonfinite[] = {".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN", NULL};
/* Plain words YAML 1.1 readers (sigs.k8s.io/yaml, PyYAML) do not read as
 * strings; "<<" is a merge key. */
static const char *const yaml11[] = {"y",  "Y",  "yes", "Yes", "YES", "n",   "N", "no", "No", "NO",
                                     "on", "On", "ON",  "off", "Off", "OFF", "=", "<<", NULL};

static bool one_of(const char *s, size_t n, const char *const *words)
{
    for (; *words; words++)
        if (strlen(*words) == n && !memcmp(s, *words, n))
            return true;
    return false;
}

/* [-+]? then decimal, 0x hex, 0o octal or 0[0-7]+ octal, within int64. */
static bool parse_int(const char *s, size_t n, json_int_t *ret)
{
    static const char hex[] = "0123456789abcdefABCDEF";
    size_t k = n && (s[0] == '-' || s[0] == '+');
    int base = 10;
    if (n - k > 2 && s[k] == '0' && (s[k + 1] == 'x' || s[k + 1] == 'o')) {
        base = s[k + 1] == 'x' ? 16 : 8;
        k += 2;
    } else if (n - k > 1 && s[k] == '0') {
        base = 8;
    }
    if (k == n || strspn(s + k, base == 16 ? hex : base == 8 ? "01234567" : DIGITS) != n - k)
        return false;
    errno = 0;
    uint64_t v = strtoull(s + k, NULL, base);
    if (errno || v > (uint64_t)INT64_MAX + (s[0] == '-'))
        return false;
    *ret = s[0] == '-' ? (json_int_t)(0 - v) : (json_int_t)v;
    return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? (s[n] is NUL) */
static bool is_float(const char *s, size_t n)
{
    size_t i = s[0] == '-' || s[0] == '+', whole, frac = 0, exp = 1;
    i += whole = strspn(s + i, DIGITS);
    if (s[i] == '.')
        i += 1 + (frac = strspn(s + i + 1, DIGITS));
    if (s[i] == 'e' || s[i] == 'E') {
        i += 1 + (s[i + 1] == '-' || s[i + 1] == '+');
        i += exp = strspn(s + i, DIGITS);
    }
    return (whole || frac) && exp && i == n;
}

/* How a plain scalar reads; s[n] must not continue a number (NUL). */
static struct scalar classify(const char *s, size_t n)
{
    struct scalar r = {.kind = K_STR};
    size_t sign = n && (s[0] == '-' || s[0] == '+');
    if (!n || one_of(s, n, nulls)) {
        r.kind = K_NULL;
    } else if (one_of(s, n, trues) || one_of(s, n, falses)) {
        r.kind = K_BOOL;
        r.i = s[0] == 't' || s[0] == 'T';
    } else if (one_of(s + sign, n - sign, nonfinite)) {
        r.kind = K_NONFINITE;
    } else if (parse_int(s, n, &r.i)) {
        r.kind = K_INT;
    } else if (is_float(s, n)) {
        r.d = strtod(s, NULL);
        r.kind = isfinite(r.d) ? K_REAL : K_NONFINITE;
    }
    return r;
}

/* Starts like a number and holds only characters of YAML 1.1 ints, floats,
 * sexagesimals and timestamps ("1_000", "1:20", "2024-01-01T00:00:00Z"). */
static bool numeric_ish(const char *s, size_t n)
{
    const char *p = s + (n > 1 && strchr("+-.", s[0]));
    return n && (strchr(DIGITS, *p) || (p > s && *p == '.')) && *p &&
           strspn(s, DIGITS "abcdefABCDEF_.:+-xXoOtTzZ ") == n;
}

static bool needs_quotes(const char *s, size_t n)
{
    return classify(s, n).kind != K_STR || one_of(s, n, yaml11) || numeric_ish(s, n);
}

/* ---------- loading ---------- */

struct frame {
    json_t *node; /* the array or object being filled */
    json_t *key;  /* object: the pending key, a string */
    bool merge;   /* the pending key is "<<" */
    char *anchor; /* register the node under this name when complete */
    size_t nodes0;
    size_t height; /* collection levels from this node down */
};

struct loader {
    yaml_parser_t parser;
    struct k8s_error *err;
    json_t *docs;
    json_t *root;    /* the current document, once complete */
    json_t *anchors; /* name -> [value, nodes, height] */
    size_t nodes;
    size_t depth;
    struct frame stack[K8S_YAML_MAX_DEPTH];
};

static int fail_at(struct loader *l, yaml_mark_t m, const char *fmt, ...) K8S_PRINTF(3, 4);
static int fail_at(struct loader *l, yaml_mark_t m, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return k8s_error_set(l->err, -K8S_EPARSE, "yaml: line %zu column %zu: %s", m.line + 1,
                         m.column + 1, msg);
}

static int nomem(struct loader *l)
{
    return k8s_error_set(l->err, -K8S_ENOMEM, "yaml: out of memory");
}

static int parser_fail(struct loader *l)
{
    yaml_parser_t *p = &l->parser;
    yaml_mark_t m = p->problem_mark;
    if (p->error == YAML_MEMORY_ERROR)
        return nomem(l);
    if (p->error == YAML_READER_ERROR) { /* only the byte offset is known */
        const unsigned char *b = p->input.string.start, *end = p->input.string.end;
        m.line = m.column = 0;
        for (size_t i = 0; i < p->problem_offset && b + i < end; i++) {
            m.column = b[i] == '\n' ? 0 : m.column + 1;
            m.line += b[i] == '\n';
        }
    }
    if (p->context)
        return fail_at(l, m, "%s (%s)", p->problem, p->context);
    return fail_at(l, m, "%s", p->problem);
}

static int count(struct loader *l, size_t n, yaml_mark_t m)
{
    if (n > K8S_YAML_MAX_NODES - l->nodes)
        return fail_at(l, m, "more than %d nodes (after alias expansion)", K8S_YAML_MAX_NODES);
    l->nodes += n;
    return 0;
}

static struct frame *expecting_key(struct loader *l)
{
    struct frame *f = l->depth ? &l->stack[l->depth - 1] : NULL;
    return f && json_is_object(f->node) && !f->key && !f->merge ? f : NULL;
}

/* Register v (borrowed) under name; a later anchor of that name wins. */
static int add_anchor(struct loader *l, const char *name, json_t *v, size_t nodes, size_t height)
{
    json_t *a = json_pack("[O,I,I]", v, (json_int_t)nodes, (json_int_t)height);
    return json_object_set_new(l->anchors, name, a) < 0 ? nomem(l) : 0;
}

/* Which type a tag demands: K_ANY to resolve plain text, K_STR for text. */
static enum kind tag_kind(const char *tag, bool plain)
{
    static const char *const names[] = {"str", "null", "bool", "int", "float"};
    static const enum kind kinds[] = {K_STR, K_NULL, K_BOOL, K_INT, K_REAL};
    if (tag && !strncmp(tag, CORE_TAG, strlen(CORE_TAG)))
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
            if (!strcmp(tag + strlen(CORE_TAG), names[i]))
                return kinds[i];
    return plain && !(tag && !strcmp(tag, "!")) ? K_ANY : K_STR;
}

static int scalar_value(struct loader *l, const yaml_event_t *ev, json_t **ret)
{
    const char *s = (const char *)ev->data.scalar.value, *tag = (const char *)ev->data.scalar.tag;
    size_t n = ev->data.scalar.length;
    enum kind want = tag_kind(tag, ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE);
    struct scalar sc = want == K_STR ? (struct scalar){.kind = K_STR} : classify(s, n);
    if (sc.kind == K_NONFINITE)
        return fail_at(l, ev->start_mark, "'%.40s': .inf and .nan have no JSON form", s);
    if (want == K_REAL && sc.kind == K_INT)
        sc = (struct scalar){.kind = K_REAL, .d = (double)sc.i};
    if (want != K_ANY && want != sc.kind)
        return fail_at(l, ev->start_mark, "cannot decode '%.40s' as !!%s", s,
                       tag + strlen(CORE_TAG));
    *ret = sc.kind == K_NULL   ? json_null()
           : sc.kind == K_BOOL ? json_boolean(sc.i)
           : sc.kind == K_INT  ? json_integer(sc.i)
           : sc.kind == K_REAL ? json_real(sc.d)
                               : json_stringn(s, n);
    return *ret ? 0 : nomem(l);
}

/* An alias used as a key: it must name a string. */
static int alias_key(struct loader *l, struct frame *f, json_t *v, yaml_mark_t m)
{
    if (!json_is_string(v))
        return fail_at(l, m, "an alias used as a mapping key must name a string");
    f->key = json_incref(v);
    return 0;
}

/* "<<: v" (steals v): copy the keys f's object lacks from v or v's maps. */
static int merge(struct loader *l, struct frame *f, json_t *v, yaml_mark_t m)
{
    json_t *maps = json_is_array(v) ? json_incref(v) : json_pack("[O]", v), *src, *e;
    const char *k;
    size_t i, kl;
    int r = maps ? 0 : -1;
    json_array_foreach(maps, i, src)
    {
        r = r ? r : !json_is_object(src);
        json_object_keylen_foreach(src, k, kl, e)
        {
            if (r == 0 && !json_object_getn(f->node, k, kl))
                r = json_object_setn(f->node, k, kl, e);
        }
    }
    json_decref(maps);
    json_decref(v);
    f->merge = false;
    if (r > 0)
        return fail_at(l, m, "map merge requires a mapping or a sequence of mappings");
    return r < 0 ? nomem(l) : 0;
}

/* Put a complete value (stolen) where it belongs. */
static int attach(struct loader *l, json_t *v, size_t height, yaml_mark_t m)
{
    struct frame *f = l->depth ? &l->stack[l->depth - 1] : NULL;
    int r;
    if (!f) {
        l->root = v;
        return 0;
    }
    if (f->height < height + 1)
        f->height = height + 1;
    if (json_is_array(f->node))
        return json_array_append_new(f->node, v) < 0 ? nomem(l) : 0;
    if (f->merge)
        return merge(l, f, v, m);
    r = json_object_setn_new(f->node, json_string_value(f->key), json_string_length(f->key), v);
    json_decref(f->key);
    f->key = NULL;
    return r < 0 ? nomem(l) : 0;
}

static int on_scalar(struct loader *l, const yaml_event_t *ev)
{
    struct frame *f = expecting_key(l);
    const char *s = (const char *)ev->data.scalar.value;
    const char *anchor = (const char *)ev->data.scalar.anchor;
    size_t n = ev->data.scalar.length;
    json_t *v = NULL;
    int r = count(l, 1, ev->start_mark);
    if (r == 0 && (!f || anchor))
        r = scalar_value(l, ev, &v);
    if (r == 0 && anchor)
        r = add_anchor(l, anchor, v, 1, 0);
    if (r == 0 && !f)
        return attach(l, v, 0, ev->start_mark);
    json_decref(v);
    if (r < 0)
        return r;
    f->merge = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag && n == 2 &&
               !memcmp(s, "<<", 2);
    if (!f->merge && !(f->key = json_stringn(s, n)))
        return nomem(l);
    return 0;
}

static int on_alias(struct loader *l, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    struct frame *f = expecting_key(l);
    json_t *a = json_object_get(l->anchors, name), *v;
    json_int_t nodes, height;
    if (!a)
        return fail_at(l, ev->start_mark, "unknown anchor '%s' referenced", name);
    if (json_unpack(a, "[oII]", &v, &nodes, &height) < 0)
        return nomem(l);
    if (!f && l->depth + (size_t)height > K8S_YAML_MAX_DEPTH)
        return fail_at(l, ev->start_mark, "nesting deeper than %d levels", K8S_YAML_MAX_DEPTH);
    int r = count(l, f ? 1 : (size_t)nodes, ev->start_mark);
    if (r < 0 || f)
        return r < 0 ? r : alias_key(l, f, v, ev->start_mark);
    v = json_deep_copy(v);
    return v ? attach(l, v, (size_t)height, ev->start_mark) : nomem(l);
}

static int on_start(struct loader *l, const yaml_event_t *ev)
{
    bool map = ev->type == YAML_MAPPING_START_EVENT;
    yaml_char_t *anchor = map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
    struct frame *f = &l->stack[l->depth];
    if (expecting_key(l))
        return fail_at(l, ev->start_mark, "mapping key must be a scalar");
    if (l->depth >= K8S_YAML_MAX_DEPTH)
        return fail_at(l, ev->start_mark, "nesting deeper than %d levels", K8S_YAML_MAX_DEPTH);
    int r = count(l, 1, ev->start_mark);
    if (r < 0)
        return r;
    *f = (struct frame){.nodes0 = l->nodes - 1, .height = 1};
    f->node = map ? json_object() : json_array();
    f->anchor = anchor ? strdup((const char *)anchor) : NULL;
    if (!f->node || (anchor && !f->anchor)) {
        json_decref(f->node);
        free(f->anchor);
        return nomem(l);
    }
    l->depth++;
    return 0;
}

static int on_end(struct loader *l, const yaml_event_t *ev)
{
    struct frame f = l->stack[--l->depth];
    int r = 0;
    if (f.anchor)
        r = add_anchor(l, f.anchor, f.node, l->nodes - f.nodes0, f.height);
    free(f.anchor);
    if (r < 0) {
        json_decref(f.node);
        return r;
    }
    return attach(l, f.node, f.height, ev->start_mark);
}

static int end_document(struct loader *l, const yaml_event_t *ev)
{
    json_t *root = l->root;
    l->root = NULL;
    json_object_clear(l->anchors);
    if (json_is_null(root)) /* an empty document */
        json_decref(root);
    else if (root && json_array_append_new(l->docs, root) < 0)
        return nomem(l);
    return 0;
}

typedef int (*handler)(struct loader *l, const yaml_event_t *ev);
static const handler handlers[] = {
    [YAML_DOCUMENT_END_EVENT] = end_document,
    [YAML_SCALAR_EVENT] = on_scalar,
    [YAML_ALIAS_EVENT] = on_alias,
    [YAML_SEQUENCE_START_EVENT] = on_start,
    [YAML_MAPPING_START_EVENT] = on_start,
    [YAML_SEQUENCE_END_EVENT] = on_end,
    [YAML_MAPPING_END_EVENT] = on_end,
};

static int run(struct loader *l)
{
    yaml_event_t ev;
    int r = 0;
    for (bool done = false; !done && r == 0;) {
        if (!yaml_parser_parse(&l->parser, &ev))
            return parser_fail(l);
        done = ev.type == YAML_STREAM_END_EVENT;
        r = handlers[ev.type] ? handlers[ev.type](l, &ev) : 0;
        yaml_event_delete(&ev);
    }
    return r;
}

static void unwind(struct loader *l)
{
    for (size_t i = 0; i < l->depth; i++) {
        json_decref(l->stack[i].node);
        json_decref(l->stack[i].key);
        free(l->stack[i].anchor);
    }
    json_decref(l->root);
    json_decref(l->anchors);
    json_decref(l->docs);
}

int k8s_yaml_load_all(const char *buf, size_t len, json_t **ret_docs, struct k8s_error *reterr)
{
    struct loader *l = calloc(1, sizeof(*l));
    int r;
    if (!l)
        return k8s_error_set(reterr, -K8S_ENOMEM, "yaml: out of memory");
    l->err = reterr;
    l->docs = json_array();
    l->anchors = json_object();
    if (!l->docs || !l->anchors || !yaml_parser_initialize(&l->parser)) {
        r = nomem(l);
        goto out_free_loader;
    }
    yaml_parser_set_input_string(&l->parser, (const unsigned char *)buf, len);
    yaml_parser_set_encoding(&l->parser, YAML_UTF8_ENCODING);
    r = run(l);
    if (r == 0) {
        *ret_docs = l->docs;
        l->docs = NULL;
    }
    yaml_parser_delete(&l->parser);
out_free_loader:
    unwind(l);
    free(l);
    return r;
}

/* ---------- dumping ---------- */

struct dumper {
    yaml_emitter_t em;
    struct k8s_buf buf;
    int werr; /* why the write handler failed */
    int r;    /* the first failure; later events are dropped */
    struct k8s_error *err;
};

static int write_out(void *data, unsigned char *p, size_t n)
{
    struct dumper *d = data;
    int r = k8s_buf_append(&d->buf, p, n);
    if (r < 0)
        d->werr = r;
    return r == 0;
}

/* Emit an event an initializer built (ok) or failed to build (!ok: invalid
 * UTF-8, too long or no memory). Returns the first failure. */
static int emit(struct dumper *d, yaml_event_t *ev, int ok)
{
    if (d->r && ok)
        yaml_event_delete(ev);
    if (d->r)
        return d->r;
    if (!ok)
        d->r = k8s_error_set(d->err, -K8S_EINVAL, "yaml: cannot encode value (bad UTF-8?)");
    else if (!yaml_emitter_emit(&d->em, ev) && d->werr)
        d->r = k8s_error_set(d->err, d->werr, "yaml: %s", k8s_strerror(d->werr));
    else if (d->em.error)
        d->r = k8s_error_set(d->err, -K8S_EINVAL, "yaml: %s",
                             d->em.problem ? d->em.problem : "emitter error");
    return d->r;
}

static int emit_scalar(struct dumper *d, const char *s, size_t n, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    yaml_char_t *p = (yaml_char_t *)s;
    return emit(d, &ev,
                n <= INT32_MAX &&
                    yaml_scalar_event_initialize(&ev, NULL, NULL, p, (int)n, 1, 1, style));
}

/* Literal blocks for multi-line text, but not with U+2028/U+2029 (libyaml
 * takes them for line breaks) nor ending in an empty line ("|+" makes
 * libyaml end the stream with "..."). */
static bool literal_ok(const char *s, size_t n)
{
    return !(s[n - 1] == '\n' && (n == 1 || s[n - 2] == '\n')) &&
           !memmem(s, n, "\xe2\x80\xa8", 3) && !memmem(s, n, "\xe2\x80\xa9", 3);
}

static int emit_string(struct dumper *d, const char *s, size_t n)
{
    yaml_scalar_style_t style = YAML_PLAIN_SCALAR_STYLE;
    if (memchr(s, '\n', n))
        style = literal_ok(s, n) ? YAML_LITERAL_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    else if (needs_quotes(s, n))
        style = YAML_DOUBLE_QUOTED_SCALAR_STYLE; /* as kubectl: "true", "123" */
    return emit_scalar(d, s, n, style);
}

/* Shortest "%g" that reads back as the same double, as a real: "1.5",
 * "1000.0", "1e-07", "1e+300". */
static void format_real(double x, char *out, size_t size)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, size, "%.*g", prec, x);
        if (strtod(out, NULL) == x)
            break;
    }
    if (strchr(out, 'e') && fabs(x) >= 1 && fabs(x) < 1e16) /* an integer */
        snprintf(out, size, "%.1f", x);
    const char *digits = out + (out[0] == '-');
    size_t n = strlen(out);
    if (!digits[strspn(digits, DIGITS)] && n + 3 <= size)
        memcpy(out + n, ".0", 3);
}

static int emit_value(struct dumper *d, const json_t *v, size_t depth);

static int emit_collection(struct dumper *d, const json_t *v, size_t depth)
{
    yaml_event_t ev;
    const char *k;
    size_t kl, i;
    json_t *e;
    bool map = json_is_object(v);
    if (depth > K8S_YAML_MAX_DEPTH && !d->r)
        d->r = k8s_error_set(d->err, -K8S_EINVAL, "yaml: document nested deeper than %d levels",
                             K8S_YAML_MAX_DEPTH);
    if (d->r)
        return d->r;
    if (map)
        emit(d, &ev,
             yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE));
    else
        emit(d, &ev,
             yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE));
    json_object_keylen_foreach((json_t *)v, k, kl, e)
    {
        if (emit_string(d, k, kl) == 0)
            emit_value(d, e, depth);
    }
    json_array_foreach(v, i, e)
    {
        if (emit_value(d, e, depth) < 0)
            break;
    }
    return map ? emit(d, &ev, yaml_mapping_end_event_initialize(&ev))
               : emit(d, &ev, yaml_sequence_end_event_initialize(&ev));
}

static int emit_value(struct dumper *d, const json_t *v, size_t depth)
{
    char num[40];
    if (json_is_object(v) || json_is_array(v))
        return emit_collection(d, v, depth + 1);
    if (json_is_string(v))
        return emit_string(d, json_string_value(v), json_string_length(v));
    if (json_is_integer(v))
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        format_real(json_real_value(v), num, sizeof(num));
    else
        strcpy(num, json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
    return emit_scalar(d, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
}

int k8s_yaml_dump(const json_t *doc, struct k8s_buf *out, struct k8s_error *reterr)
{
    struct dumper d = {.err = reterr};
    yaml_event_t ev;
    int r;
    k8s_buf_init(&d.buf, out->max - out->len); /* so the final append fits */
    if (!yaml_emitter_initialize(&d.em))
        return k8s_error_set(reterr, -K8S_ENOMEM, "yaml: out of memory");
    yaml_emitter_set_output(&d.em, write_out, &d);
    yaml_emitter_set_unicode(&d.em, 1);
    yaml_emitter_set_indent(&d.em, 2);
    yaml_emitter_set_width(&d.em, -1);
    emit(&d, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
    emit(&d, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
    emit_value(&d, doc, 0);
    emit(&d, &ev, yaml_document_end_event_initialize(&ev, 1));
    r = emit(&d, &ev, yaml_stream_end_event_initialize(&ev));
    if (r == 0 && (r = k8s_buf_append(out, d.buf.data, d.buf.len)) < 0)
        k8s_error_set(reterr, r, "yaml: %s", k8s_strerror(r));
    yaml_emitter_delete(&d.em);
    k8s_buf_done(&d.buf);
    return r;
}

bool k8s_yaml_looks_like_json(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!strchr(" \t\r\n", buf[i]) || !buf[i])
            return buf[i] == '{' || buf[i] == '[';
    return false;
}
