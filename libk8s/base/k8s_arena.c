#include "k8s_arena.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
/* Released memory is poisoned, so a value used after its scope ends is a
 * reported use-after-poison, not silent corruption. */
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

struct chunk {
    struct chunk *next;
    char *end;
    char *at;
    char data[] __attribute__((aligned(16)));
};

struct k8s_arena {
    struct chunk *head; /* the chunk being filled; the first one is last in the list */
    struct chunk *first;
    size_t chunk;
    size_t used;
};

static struct chunk *chunk_new(size_t size)
{
    struct chunk *c = malloc(sizeof(*c) + size);
    if (!c)
        return NULL;
    c->next = NULL;
    c->at = c->data;
    c->end = c->data + size;
    POISON(c->data, size);
    return c;
}

struct k8s_arena *k8s_arena_new(size_t chunk)
{
    struct k8s_arena *a = calloc(1, sizeof(*a));
    if (!a || !(a->first = a->head = chunk_new(chunk))) {
        free(a);
        return NULL;
    }
    a->chunk = chunk;
    return a;
}

void k8s_arena_free(struct k8s_arena *a)
{
    if (!a)
        return;
    for (struct chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        UNPOISON(c->data, (size_t)(c->end - c->data));
        free(c);
    }
    free(a);
}

void *k8s_arena_alloc(struct k8s_arena *a, size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    if (need < n)
        return NULL;
    if ((size_t)(a->head->end - a->head->at) < need) {
        size_t size = need > a->chunk ? need : a->chunk;
        struct chunk *c = chunk_new(size);
        if (!c)
            return NULL;
        c->next = a->head;
        a->head = c;
    }
    void *p = a->head->at;
    a->head->at += need;
    a->used += need;
    UNPOISON(p, n);
    return p;
}

bool k8s_arena_owns(const struct k8s_arena *a, const void *p)
{
    for (const struct chunk *c = a->head; c; c = c->next)
        if ((const char *)p >= c->data && (const char *)p < c->end)
            return true;
    return false;
}

/* Cap on how big the retained first chunk may grow. */
#define MAX_RETAINED (8u << 20)

void k8s_arena_reset(struct k8s_arena *a)
{
    size_t high = a->used;
    bool spilled = a->head != a->first;
    while (a->head != a->first) {
        struct chunk *c = a->head;
        a->head = c->next;
        UNPOISON(c->data, (size_t)(c->end - c->data));
        free(c);
    }
    a->first->at = a->first->data;
    a->used = 0;
    POISON(a->first->data, (size_t)(a->first->end - a->first->data));
    /* Learn the working size: when a request spilled into extra chunks,
     * the next one gets a first chunk that holds it whole, so steady
     * traffic never calls malloc (or mmap) for its values. */
    if (spilled && high <= MAX_RETAINED) {
        size_t size = (high + high / 4 + 0xFFFF) & ~(size_t)0xFFFF;
        struct chunk *c = chunk_new(size);
        if (c) {
            UNPOISON(a->first->data, (size_t)(a->first->end - a->first->data));
            free(a->first);
            a->first = a->head = c;
        }
    }
}

size_t k8s_arena_used(const struct k8s_arena *a)
{
    return a->used;
}

/* ---------- per-request memory, passed explicitly ---------- */

void *k8s_arena_malloc(struct k8s_arena *a, size_t n)
{
    return a ? k8s_arena_alloc(a, n) : malloc(n);
}

/* Grow p, the last block handed out (size bytes), to n in place. */
static bool extend(struct k8s_arena *a, void *p, size_t size, size_t n)
{
    size_t have = (size + 15) & ~(size_t)15, need = (n + 15) & ~(size_t)15;
    struct chunk *c = a->head;
    if ((char *)p + have != c->at || need < n || need < have ||
        (size_t)(c->end - c->at) < need - have)
        return false;
    c->at += need - have;
    a->used += need - have;
    UNPOISON(p, n);
    return true;
}

void *k8s_arena_realloc(struct k8s_arena *a, void *p, size_t used, size_t n)
{
    if (!a)
        return realloc(p, n);
    if (p && extend(a, p, used, n))
        return p;
    void *q = k8s_arena_alloc(a, n); /* the old block returns at the reset */
    if (q && p)
        memcpy(q, p, used < n ? used : n);
    return q;
}

void k8s_arena_release(struct k8s_arena *a, void *p)
{
    if (!a)
        free(p);
}

/* ---------- jansson routing ---------- */

static __thread struct k8s_arena *scope;

/* jansson's allocator: the calling thread's scope, else malloc. */
static void *scope_alloc(size_t n)
{
    return k8s_arena_malloc(scope, n);
}

/* jansson's free: a no-op for the scope's memory; free() for anything
 * else, since values made outside the scope may be released inside. */
static void scope_free(void *p)
{
    struct k8s_arena *a = scope;
    if (p && !(a && k8s_arena_owns(a, p)))
        free(p);
}

void k8s_arena_jansson_install(void)
{
    json_set_alloc_funcs(scope_alloc, scope_free);
}

void k8s_arena_forget(json_t **v)
{
    if (!(scope && *v && k8s_arena_owns(scope, *v)))
        json_decref(*v);
    *v = NULL;
}

void k8s_arena_enter(struct k8s_arena *a)
{
    scope = a;
}

void k8s_arena_leave(void)
{
    scope = NULL;
}

struct k8s_arena *k8s_arena_pause(void)
{
    struct k8s_arena *a = scope;
    scope = NULL;
    return a;
}

void k8s_arena_resume(struct k8s_arena *a)
{
    scope = a;
}
