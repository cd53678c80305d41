#include "op_hosts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_selector.h"

#define F "spec.triggerCapture.hosts."

void op_hosts_done(struct op_hosts *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n_roles; i++)
        free(h->roles[i]);
    free(h->roles);
    free(h->ranges);
    json_decref(h->selector);
    memset(h, 0, sizeof(*h));
}

/* ---------- parsing ---------- */

static int roles(struct op_hosts *h, const json_t *v, struct k8s_error *reterr)
{
    size_t n = json_array_size(v), i;
    json_t *e;
    if (!json_is_array(v) || n > OP_HOSTS_MAX_ROLES)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "replicatedJobs: must be a list of at most %d "
                               "names",
                             OP_HOSTS_MAX_ROLES);
    if (n && !(h->roles = calloc(n, sizeof(*h->roles))))
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    json_array_foreach(v, i, e)
    {
        const char *s = json_string_value(e);
        if (!s || !*s)
            return k8s_error_set(reterr, -K8S_EINVAL, F "replicatedJobs[%zu]: must be a name", i);
        if (!(h->roles[h->n_roles++] = strdup(s)))
            return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    }
    return 0;
}

/* One number of an indices list at *p, moving *p past it. */
static bool number(const char **p, int64_t *out)
{
    char *end;
    if (**p < '0' || **p > '9')
        return false;
    errno = 0;
    long long x = strtoll(*p, &end, 10);
    if (errno || x > 100000000)
        return false;
    *out = x;
    *p = end;
    return true;
}

static int bad_indices(const char *s, const char *why, struct k8s_error *reterr)
{
    char q[K8S_QUOTE_CAP];
    return k8s_error_set(reterr, -K8S_EINVAL, F "indices: %s (got \"%s\")", why,
                         k8s_quote(q, s, strlen(s)));
}

/* "0-3,8": ranges of host indices, at most OP_HOSTS_MAX_RANGES. */
static int indices(struct op_hosts *h, const char *s, struct k8s_error *reterr)
{
    if (!(h->ranges = calloc(OP_HOSTS_MAX_RANGES, sizeof(*h->ranges))))
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    for (const char *p = s;;) {
        struct op_range r;
        while (*p == ' ')
            p++;
        if (!number(&p, &r.lo))
            return bad_indices(s, "must be indices and ranges such as 0-3,8", reterr);
        r.hi = r.lo;
        if (*p == '-') {
            p++;
            if (!number(&p, &r.hi))
                return bad_indices(s, "must be indices and ranges such as 0-3,8", reterr);
        }
        if (r.hi < r.lo)
            return bad_indices(s, "a range must not run backwards", reterr);
        if (h->n_ranges == OP_HOSTS_MAX_RANGES)
            return bad_indices(s, "at most 64 indices and ranges", reterr);
        h->ranges[h->n_ranges++] = r;
        while (*p == ' ')
            p++;
        if (!*p)
            return 0;
        if (*p++ != ',')
            return bad_indices(s, "must be indices and ranges such as 0-3,8", reterr);
    }
}

static int selector(struct op_hosts *h, json_t *v, struct k8s_error *reterr)
{
    char why[300];
    json_t *none = json_object();
    int r = json_is_object(v) ? k8s_selector_match(v, none, why, sizeof(why)) : -K8S_EINVAL;
    json_decref(none);
    if (!json_is_object(v))
        return k8s_error_set(reterr, -K8S_EINVAL, F "selector: must be a label selector");
    if (r == -K8S_EINVAL)
        return k8s_error_set(reterr, -K8S_EINVAL, F "selector: %s", why);
    h->selector = json_deep_copy(v);
    return h->selector ? 0 : k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
}

static int max(struct op_hosts *h, const json_t *v, struct k8s_error *reterr)
{
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 2147483647)
        return k8s_error_set(reterr, -K8S_EINVAL, F "max: must be an integer of at least 1");
    h->max = json_integer_value(v);
    return 0;
}

static int parse(const json_t *hosts, struct op_hosts *h, struct k8s_error *reterr)
{
    json_t *v;
    int r = 0;
    if (!json_is_object(hosts))
        return k8s_error_set(reterr, -K8S_EINVAL, "spec.triggerCapture.hosts: must be an object");
    h->set = true;
    if ((v = json_object_get(hosts, "replicatedJobs")) && !json_is_null(v))
        r = roles(h, v, reterr);
    if (r == 0 && (v = json_object_get(hosts, "indices")) && !json_is_null(v))
        r = json_is_string(v) ? indices(h, json_string_value(v), reterr)
                              : k8s_error_set(reterr, -K8S_EINVAL, F "indices: must be a string");
    if (r == 0 && (v = json_object_get(hosts, "selector")) && !json_is_null(v))
        r = selector(h, v, reterr);
    if (r == 0 && (v = json_object_get(hosts, "max")) && !json_is_null(v))
        r = max(h, v, reterr);
    return r;
}

int op_hosts_parse(const json_t *hosts, struct op_hosts *ret, struct k8s_error *reterr)
{
    struct op_hosts h = {0};
    int r = hosts && !json_is_null(hosts) ? parse(hosts, &h, reterr) : 0;
    if (r < 0) {
        op_hosts_done(&h);
        memset(ret, 0, sizeof(*ret));
        return r;
    }
    *ret = h;
    return 0;
}

/* ---------- choosing ---------- */

void op_host_read(const struct k8s_kind *k, k8s_label_fn *get, const void *labels,
                  struct op_host *out)
{
    out->rule = k8s_kind_host_role(k, get, labels, &out->role);
    for (int i = 0; i < K8S_KIND_MAX_RANKS; i++) {
        const char *v = k->hosts.ranks[i] ? get(labels, k->hosts.ranks[i]) : NULL;
        char *end = NULL;
        long long x = v && *v >= '0' && *v <= '9' ? strtoll(v, &end, 10) : -1;
        out->rank[i] = end && *end ? -1 : x;
    }
}

static int index_order(const void *a, const void *b)
{
    const struct op_host *x = a, *y = b;
    for (int i = 0; i < K8S_KIND_MAX_RANKS; i++)
        if (x->rank[i] != y->rank[i])
            return x->rank[i] < y->rank[i] ? -1 : 1;
    if (x->rule != y->rule)
        return x->rule < y->rule ? -1 : 1;
    return strcmp(x->name, y->name);
}

static bool takes(const struct op_hosts *h, const struct op_host *x, size_t index)
{
    bool ok = h->n_roles == 0;
    for (size_t i = 0; !ok && i < h->n_roles; i++)
        ok = x->role && !strcmp(x->role, h->roles[i]);
    bool in = h->n_ranges == 0;
    for (size_t i = 0; ok && !in && i < h->n_ranges; i++)
        in = (int64_t)index >= h->ranges[i].lo && (int64_t)index <= h->ranges[i].hi;
    return ok && in && (!h->selector || k8s_selector_match(h->selector, x->labels, NULL, 0) == 1);
}

int op_hosts_choose(const struct op_hosts *h, struct op_host *v, size_t n, size_t *ret_kept)
{
    size_t kept = 0, rest = 0;
    if (!n) {
        *ret_kept = 0;
        return 0;
    }
    struct op_host *out = malloc(2 * n * sizeof(*out)), *others;
    if (!out)
        return -K8S_ENOMEM;
    others = out + n;
    qsort(v, n, sizeof(*v), index_order);
    for (size_t i = 0; i < n; i++) {
        if (takes(h, &v[i], i))
            out[kept++] = v[i];
        else
            others[rest++] = v[i];
    }
    memcpy(out + kept, others, rest * sizeof(*out));
    if (h->max && kept > (size_t)h->max) /* max: the first N of those taken */
        kept = (size_t)h->max;
    memcpy(v, out, n * sizeof(*v));
    free(out);
    *ret_kept = kept;
    return 0;
}

const char *op_hosts_describe(const struct op_hosts *h, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < h->n_roles && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "," : "replicatedJobs ", h->roles[i]);
    for (size_t i = 0; i < h->n_ranges && n < cap; i++) {
        const struct op_range *r = &h->ranges[i];
        const char *sep = i ? "," : n ? ", indices " : "indices ";
        n += r->lo == r->hi ? (size_t)snprintf(out + n, cap - n, "%s%lld", sep, (long long)r->lo)
                            : (size_t)snprintf(out + n, cap - n, "%s%lld-%lld", sep,
                                               (long long)r->lo, (long long)r->hi);
    }
    if (h->selector && n < cap)
        n += (size_t)snprintf(out + n, cap - n, "%sselector", n ? ", " : "");
    if (h->max && n < cap)
        snprintf(out + n, cap - n, "%smax %lld", n ? ", " : "", (long long)h->max);
    return out;
}
