#include "op_holds.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct holder;

struct entry {
    struct entry *next; /* in its bucket */
    struct holder *by;
    uint64_t mark; /* the claim that last listed it */
    char pod[];
};

struct holder {
    struct holder *next;
    const void *id;
    char *name;
    struct entry **held;
    size_t n;
};

struct op_holds {
    pthread_mutex_t lock;
    struct entry **bucket;
    size_t nbuckets, count;
    struct holder *holders;
    uint64_t serial;
};

/* ---------- the table (lock held) ---------- */

static size_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static struct entry *find(const struct op_holds *h, const char *pod)
{
    for (struct entry *e = h->bucket[hash(pod) % h->nbuckets]; e; e = e->next)
        if (!strcmp(e->pod, pod))
            return e;
    return NULL;
}

static void unlink_entry(struct op_holds *h, struct entry *e)
{
    for (struct entry **p = &h->bucket[hash(e->pod) % h->nbuckets]; *p; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            h->count--;
            return;
        }
}

/* Room for `more` entries at one per bucket or better. */
static bool reserve(struct op_holds *h, size_t more)
{
    size_t want = h->nbuckets;
    while (want < h->count + more)
        want *= 2;
    if (want == h->nbuckets)
        return true;
    struct entry **b = calloc(want, sizeof(*b));
    if (!b)
        return false;
    for (size_t i = 0; i < h->nbuckets; i++)
        for (struct entry *e = h->bucket[i], *next; e; e = next) {
            next = e->next;
            size_t k = hash(e->pod) % want;
            e->next = b[k];
            b[k] = e;
        }
    free(h->bucket);
    h->bucket = b;
    h->nbuckets = want;
    return true;
}

static struct holder *holder_of(const struct op_holds *h, const void *id)
{
    for (struct holder *x = h->holders; x; x = x->next)
        if (x->id == id)
            return x;
    return NULL;
}

static void holder_drop(struct op_holds *h, struct holder *x)
{
    for (size_t i = 0; i < x->n; i++) {
        unlink_entry(h, x->held[i]);
        free(x->held[i]);
    }
    for (struct holder **p = &h->holders; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            break;
        }
    free(x->held);
    free(x->name);
    free(x);
}

/* ---------- claim ---------- */

/* The first pod another holder has, or NULL. */
static const struct entry *taken(const struct op_holds *h, const void *id, char *const *pods,
                                 size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct entry *e = find(h, pods[i]);
        if (e && e->by->id != id)
            return e;
    }
    return NULL;
}

/* List pods[] for x in `now` (fresh entries inserted as they are made);
 * false when out of memory, with the fresh ones removed again. */
static bool take(struct op_holds *h, struct holder *x, char *const *pods, size_t n,
                 struct entry **now, size_t *ret_n)
{
    size_t k = 0, fresh_from = 0;
    struct entry **fresh = calloc(n ? n : 1, sizeof(*fresh));
    bool ok = fresh != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        struct entry *e = find(h, pods[i]);
        if (e && e->mark == h->serial)
            continue; /* listed twice */
        if (!e && (e = malloc(sizeof(*e) + strlen(pods[i]) + 1))) {
            strcpy(e->pod, pods[i]);
            e->by = x;
            size_t b = hash(e->pod) % h->nbuckets;
            e->next = h->bucket[b];
            h->bucket[b] = e;
            h->count++;
            fresh[fresh_from++] = e;
        }
        ok = e != NULL;
        if (ok) {
            e->mark = h->serial;
            now[k++] = e;
        }
    }
    for (size_t i = 0; !ok && i < fresh_from; i++) {
        unlink_entry(h, fresh[i]);
        free(fresh[i]);
    }
    free(fresh);
    *ret_n = k;
    return ok;
}

static int claim_locked(struct op_holds *h, const void *id, const char *name, char *const *pods,
                        size_t n)
{
    struct holder *x = holder_of(h, id);
    bool made = !x;
    if (made && (!(x = calloc(1, sizeof(*x))) || !(x->name = strdup(name)))) {
        free(x);
        return -K8S_ENOMEM;
    }
    x->id = id;
    if (made) {
        x->next = h->holders;
        h->holders = x;
    }
    struct entry **now = calloc(n ? n : 1, sizeof(*now));
    size_t k = 0;
    h->serial++;
    if (!now || !reserve(h, n) || !take(h, x, pods, n, now, &k)) {
        free(now);
        if (made)
            holder_drop(h, x);
        return -K8S_ENOMEM;
    }
    for (size_t i = 0; i < x->n; i++) /* what the previous claim had and this one has not */
        if (x->held[i]->mark != h->serial) {
            unlink_entry(h, x->held[i]);
            free(x->held[i]);
        }
    free(x->held);
    x->held = now;
    x->n = k;
    char *nm = strdup(name);
    if (nm) {
        free(x->name);
        x->name = nm;
    }
    return 0;
}

int op_holds_claim(struct op_holds *h, const void *holder, const char *name, char *const *pods,
                   size_t n, struct k8s_error *reterr)
{
    pthread_mutex_lock(&h->lock);
    const struct entry *e = taken(h, holder, pods, n);
    int r;
    if (e) {
        const char *slash = strchr(e->pod, '/');
        r = k8s_error_set(reterr, -K8S_ECONFLICT, "pod %s is busy with capture %s",
                          slash ? slash + 1 : e->pod, e->by->name);
    } else if ((r = claim_locked(h, holder, name, pods, n)) < 0) {
        k8s_error_set(reterr, r, "out of memory");
    }
    pthread_mutex_unlock(&h->lock);
    return r;
}

void op_holds_release(struct op_holds *h, const void *holder)
{
    pthread_mutex_lock(&h->lock);
    struct holder *x = holder_of(h, holder);
    if (x)
        holder_drop(h, x);
    pthread_mutex_unlock(&h->lock);
}

size_t op_holds_count(struct op_holds *h)
{
    pthread_mutex_lock(&h->lock);
    size_t n = h->count;
    pthread_mutex_unlock(&h->lock);
    return n;
}

/* ---------- lifecycle ---------- */

struct op_holds *op_holds_new(void)
{
    struct op_holds *h = calloc(1, sizeof(*h));
    if (!h || !(h->bucket = calloc(64, sizeof(*h->bucket)))) {
        free(h);
        return NULL;
    }
    h->nbuckets = 64;
    pthread_mutex_init(&h->lock, NULL);
    return h;
}

void op_holds_free(struct op_holds *h)
{
    if (!h)
        return;
    while (h->holders)
        holder_drop(h, h->holders);
    free(h->bucket);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
