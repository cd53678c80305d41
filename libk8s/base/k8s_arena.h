/*
 * k8s_arena — a bump allocator for per-request memory (the nginx/h2o pool
 * idea), the switch that routes jansson's allocations into it, and the
 * same routing for any per-request buffer (k8s_scope_alloc).
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
 * Outside any scope, jansson uses malloc/free as usual.
 *
 * Thread-safety: an arena belongs to one thread; the scope is per thread.
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

void k8s_arena_jansson_install(void);

/* Per-request memory for any code, not only jansson: in the calling
 * thread's scope, n bytes of its arena (no malloc, no page faults once the
 * arena has learnt the working size); outside any scope, malloc(n).
 * k8s_scope_free releases either (a no-op for the scope's arena memory);
 * it must run in the scope the memory was taken in. NULL on OOM. */
void *k8s_scope_alloc(size_t n);
/* Resize p (from k8s_scope_alloc/_realloc in the same scope, or NULL),
 * whose size is `used` bytes (all kept, up to n), to n bytes: in the
 * scope's arena, in place when p is the last block handed out, else a new
 * block (the old one returns at the reset); realloc outside any scope or
 * for malloc'd memory. NULL on OOM, p left as it was. */
void *k8s_scope_realloc(void *p, size_t used, size_t n);
void k8s_scope_free(void *p);

/* Drop the reference *v (then NULL). When *v lives in the current scope's
 * arena, the tree is not walked: its memory returns at the next reset.
 * Only for trees built in the scope from values of the scope (or jansson's
 * static true/false/null) — a tree holding a malloc'd value would leak that
 * value's reference. Otherwise it is json_decref. */
void k8s_arena_forget(json_t **v);
void k8s_arena_enter(struct k8s_arena *a);
void k8s_arena_leave(void);

/* Leave the thread's scope for a while (returns it, or NULL) and come back:
 * for long-lived structures (caches) touched from inside a request. */
struct k8s_arena *k8s_arena_pause(void);
void k8s_arena_resume(struct k8s_arena *a);

#endif
