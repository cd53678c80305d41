/*
 * k8s_arena — a bump allocator for per-request memory (the nginx/h2o pool
 * idea): buffers taken from an arena the caller passes explicitly
 * (k8s_arena_malloc, NULL: malloc), and the per-thread switch that routes
 * jansson's allocations into one.
 *
 * jansson allocates several blocks per value (the value, its string copy,
 * hashtable buckets and pairs); for a 64 KiB pod glibc malloc/free were
 * ~40% of the admission's instructions. Inside an arena scope every
 * jansson allocation of the calling thread is a pointer bump and every
 * free of arena memory a no-op; the whole request is released at once by
 * k8s_arena_reset.
 *
 * Rules (the price of the speed):
 *   - k8s_arena_jansson_install() once at startup, before any jansson use
 *     and before threads start; it routes jansson through k8s_arena.
 *   - Between k8s_arena_enter(a) and k8s_arena_leave() on a thread, every
 *     jansson value that thread creates lives in `a`: all of them must be
 *     released (decref'd) before k8s_arena_leave, and none may be handed
 *     to anything that outlives the scope (caches, other threads). Values
 *     created elsewhere (malloc'd) may be used and released inside.
 *   - json_dumps() results created in scope must not be passed to free().
 * Outside any scope, jansson uses malloc/free as usual. Only jansson's
 * allocations follow the scope: every other buffer is taken from an arena
 * passed explicitly, so a function that is given no arena allocates
 * nothing in one.
 *
 * Thread-safety: an arena belongs to one thread; the scope is per thread.
 * Ownership: everything taken from an arena is the arena's, released all
 * at once by k8s_arena_reset or k8s_arena_free; nothing is freed alone.
 * Failure: the allocators return NULL on OOM and change nothing.
 */
#ifndef K8S_ARENA_H
#define K8S_ARENA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct k8s_arena;

/* New arena whose first chunk is chunk bytes (kept across resets). NULL on
 * OOM. */
struct k8s_arena *k8s_arena_new(size_t chunk);
void k8s_arena_free(struct k8s_arena *a);

/* 16-byte aligned memory, or NULL on OOM. Freed only by reset/free. */
void *k8s_arena_alloc(struct k8s_arena *a, size_t n);
bool k8s_arena_owns(const struct k8s_arena *a, const void *p);
/* Release everything allocated; keeps the first chunk. */
void k8s_arena_reset(struct k8s_arena *a);
/* Bytes handed out since the last reset. */
size_t k8s_arena_used(const struct k8s_arena *a);

/* ---------- per-request memory, passed explicitly ----------
 * The request's code receives its arena (as h2o passes its pool) and takes
 * its buffers from it: a pointer bump, no malloc and no page faults once
 * the arena has learnt the working size. A NULL arena is malloc, realloc
 * and free, for code outside any request (the offline inject command,
 * tests). Memory taken with an arena is resized and released with that
 * same arena (NULL included). */

/* n bytes of a (NULL: malloc(n)). NULL on OOM. */
void *k8s_arena_malloc(struct k8s_arena *a, size_t n);
/* Resize p (from k8s_arena_malloc/_realloc with a, or NULL), whose size is
 * `used` bytes (all kept, up to n), to n bytes: in place when p is a's last
 * block, else a new block (the old one returns at the reset); a NULL:
 * realloc. NULL on OOM, p left as it was. */
void *k8s_arena_realloc(struct k8s_arena *a, void *p, size_t used, size_t n);
/* Release p (from k8s_arena_malloc/_realloc with a, or NULL): a no-op for
 * an arena's memory (it returns at the reset); a NULL: free(p). */
void k8s_arena_release(struct k8s_arena *a, void *p);

/* ---------- jansson's allocations, routed per thread ----------
 * jansson's allocator is process-global and takes no parameter, so its
 * allocations cannot be handed an arena: they follow the calling thread's
 * scope instead. Only the admission entry point (wh_admit) enters one. */

/* Route jansson through the calling thread's scope (malloc/free outside
 * any): once at startup, before any jansson use and before threads start. */
void k8s_arena_jansson_install(void);
void k8s_arena_enter(struct k8s_arena *a);
void k8s_arena_leave(void);

/* Drop the reference *v (then NULL). When *v lives in the current scope's
 * arena, the tree is not walked: its memory returns at the next reset.
 * Only for trees built in the scope from values of the scope (or jansson's
 * static true/false/null) — a tree holding a malloc'd value would leak that
 * value's reference. Otherwise it is json_decref. */
void k8s_arena_forget(json_t **v);

/* Leave the thread's scope for a while (returns it, or NULL) and come back:
 * for jansson values that outlive the request (caches) made or stored from
 * inside one. The library never does this itself: whoever entered the
 * scope pauses it around such calls. */
struct k8s_arena *k8s_arena_pause(void);
void k8s_arena_resume(struct k8s_arena *a);

#endif
