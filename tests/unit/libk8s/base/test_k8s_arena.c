/* The per-request arena and jansson's routing through it. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "k8s_arena.h"
#include "test_support.h"

Test(k8s_arena, aligned_owned_and_reset)
{
    struct k8s_arena *a = k8s_arena_new(1024);
    cr_assert_not_null(a);
    void *p = k8s_arena_alloc(a, 3), *q = k8s_arena_alloc(a, 5000); /* spills */
    cr_assert_eq((uintptr_t)p % 16, 0);
    cr_assert_eq((uintptr_t)q % 16, 0);
    cr_assert(k8s_arena_owns(a, p) && k8s_arena_owns(a, q));
    int local;
    cr_assert_not(k8s_arena_owns(a, &local));
    cr_assert_geq(k8s_arena_used(a), 5003);
    k8s_arena_reset(a);
    cr_assert_eq(k8s_arena_used(a), 0);
    /* the first chunk learnt the working size: the same load now fits */
    p = k8s_arena_alloc(a, 3);
    q = k8s_arena_alloc(a, 5000);
    cr_assert(k8s_arena_owns(a, q));
    k8s_arena_reset(a);
    k8s_arena_free(a);
    k8s_arena_free(NULL);
}

Test(k8s_arena, jansson_values_live_in_the_scope)
{
    k8s_arena_jansson_install();
    json_t *outside = json_pack("{s:s}", "made", "outside"); /* malloc'd */
    struct k8s_arena *a = k8s_arena_new(4096);
    k8s_arena_enter(a);
    json_t *v = ts_load_json("admission/bench-jobset-5k.json");
    cr_assert(k8s_arena_owns(a, v), "values made in scope come from the arena");
    cr_assert_not(k8s_arena_owns(a, outside));
    json_object_set(v, "borrowed", outside); /* an outside value used inside */
    json_decref(v);
    json_decref(outside); /* freed with free(), inside the scope */
    k8s_arena_leave();
    k8s_arena_reset(a);
    json_t *after = json_string("after");
    cr_assert_not(k8s_arena_owns(a, after));
    json_decref(after);
    k8s_arena_free(a);
}

Test(k8s_arena, scope_memory_for_any_code)
{
    void *outside = k8s_scope_alloc(100); /* no scope: malloc'd */
    cr_assert_not_null(outside);
    struct k8s_arena *a = k8s_arena_new(4096);
    k8s_arena_enter(a);
    void *in = k8s_scope_alloc(65537); /* spills into a chunk of its own */
    cr_assert_not_null(in);
    cr_assert(k8s_arena_owns(a, in), "memory taken in scope is the arena's");
    cr_assert_not(k8s_arena_owns(a, outside));
    memset(in, 0xA5, 65537);
    k8s_scope_free(in);      /* a no-op: it returns with the reset */
    k8s_scope_free(outside); /* free()d, inside the scope */
    k8s_scope_free(NULL);
    k8s_arena_leave();
    k8s_arena_reset(a);
    cr_assert_eq(k8s_arena_used(a), 0);
    k8s_arena_free(a);
    void *after = k8s_scope_alloc(8);
    cr_assert_not_null(after);
    k8s_scope_free(after); /* no scope again: free() */
}

/* k8s_scope_realloc: in place when the block is the arena's last, else a
 * copy; realloc outside a scope and for malloc'd memory. Contents kept. */
Test(k8s_arena, scope_realloc_in_place_copy_or_realloc)
{
    unsigned char *out = k8s_scope_realloc(NULL, 0, 10); /* no scope */
    cr_assert_not_null(out);
    memset(out, 1, 10);
    out = k8s_scope_realloc(out, 10, 5000);
    cr_assert_not_null(out);
    cr_expect_eq(out[9], 1);
    struct k8s_arena *a = k8s_arena_new(8192);
    k8s_arena_enter(a);
    unsigned char *p = k8s_scope_realloc(NULL, 0, 64);
    cr_assert(k8s_arena_owns(a, p));
    memset(p, 7, 64);
    unsigned char *q = k8s_scope_realloc(p, 64, 256);
    cr_expect_eq(q, p, "the last block grows in place");
    memset(q + 64, 8, 192);
    size_t used = k8s_arena_used(a);
    cr_expect_eq(used, 256);
    void *other = k8s_scope_alloc(16); /* now q is not the last block */
    unsigned char *r = k8s_scope_realloc(q, 256, 1024);
    cr_expect_neq(r, q, "a block with another after it is copied");
    cr_expect_eq(r[63], 7);
    cr_expect_eq(r[255], 8);
    memset(r, 9, 1024);
    unsigned char *big = k8s_scope_realloc(r, 1024, 20000); /* past the chunk */
    cr_assert_not_null(big);
    cr_expect_eq(big[1023], 9);
    memset(big, 0, 20000);
    unsigned char *m = k8s_scope_realloc(out, 5000, 6000); /* malloc'd: realloc */
    cr_assert_not_null(m);
    cr_expect_not(k8s_arena_owns(a, m));
    cr_expect_eq(m[9], 1);
    k8s_scope_free(m);
    k8s_scope_free(other);
    k8s_arena_leave();
    k8s_arena_reset(a);
    k8s_arena_free(a);
}
