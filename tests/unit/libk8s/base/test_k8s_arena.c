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

/* Per-request buffers come from the arena passed, not from the scope: a
 * NULL arena is malloc even inside a scope, and an arena is used without
 * one. */
Test(k8s_arena, explicit_memory_ignores_the_scope)
{
    k8s_arena_jansson_install();
    struct k8s_arena *a = k8s_arena_new(4096), *b = k8s_arena_new(4096);
    k8s_arena_enter(a);
    void *plain = k8s_arena_malloc(NULL, 100); /* malloc'd, though in a's scope */
    void *in_b = k8s_arena_malloc(b, 65537);   /* b's: spills into a chunk of its own */
    json_t *v = json_object();                 /* jansson's alone follow the scope */
    cr_assert(plain && in_b && v);
    cr_expect_not(k8s_arena_owns(a, plain));
    cr_expect(k8s_arena_owns(b, in_b), "memory taken with an arena is that arena's");
    cr_expect_not(k8s_arena_owns(a, in_b));
    cr_expect(k8s_arena_owns(a, v));
    memset(in_b, 0xA5, 65537);
    k8s_arena_release(b, in_b);     /* a no-op: it returns with the reset */
    k8s_arena_release(NULL, plain); /* free()d */
    k8s_arena_release(NULL, NULL);
    json_decref(v);
    k8s_arena_leave();
    k8s_arena_reset(b);
    cr_assert_eq(k8s_arena_used(b), 0);
    void *outside = k8s_arena_malloc(b, 8); /* no scope: still b's */
    cr_expect(k8s_arena_owns(b, outside));
    k8s_arena_free(a);
    k8s_arena_free(b);
}

/* A value stored for longer than the request is made with the scope
 * paused: malloc'd, and the scope comes back as it was. */
Test(k8s_arena, pause_makes_lasting_values)
{
    k8s_arena_jansson_install();
    struct k8s_arena *a = k8s_arena_new(4096);
    k8s_arena_enter(a);
    struct k8s_arena *was = k8s_arena_pause();
    cr_expect_eq(was, a);
    json_t *kept = json_string("kept");
    k8s_arena_resume(was);
    json_t *v = json_string("request");
    cr_expect_not(k8s_arena_owns(a, kept));
    cr_expect(k8s_arena_owns(a, v));
    k8s_arena_forget(&v); /* the arena's: not walked */
    cr_expect_null(v);
    k8s_arena_leave();
    k8s_arena_reset(a);
    k8s_arena_free(a);
    cr_expect_str_eq(json_string_value(kept), "kept", "outlives the arena");
    k8s_arena_forget(&kept); /* no scope: json_decref */
    cr_expect_null(k8s_arena_pause(), "no scope outside enter/leave");
}

/* k8s_arena_realloc: in place when the block is the arena's last, else a
 * copy; realloc with no arena. Contents kept. */
Test(k8s_arena, realloc_in_place_copy_or_realloc)
{
    unsigned char *out = k8s_arena_realloc(NULL, NULL, 0, 10); /* no arena */
    cr_assert_not_null(out);
    memset(out, 1, 10);
    out = k8s_arena_realloc(NULL, out, 10, 5000);
    cr_assert_not_null(out);
    cr_expect_eq(out[9], 1);
    struct k8s_arena *a = k8s_arena_new(8192);
    unsigned char *p = k8s_arena_realloc(a, NULL, 0, 64);
    cr_assert(k8s_arena_owns(a, p));
    memset(p, 7, 64);
    unsigned char *q = k8s_arena_realloc(a, p, 64, 256);
    cr_expect_eq(q, p, "the last block grows in place");
    memset(q + 64, 8, 192);
    size_t used = k8s_arena_used(a);
    cr_expect_eq(used, 256);
    void *other = k8s_arena_malloc(a, 16); /* now q is not the last block */
    unsigned char *r = k8s_arena_realloc(a, q, 256, 1024);
    cr_expect_neq(r, q, "a block with another after it is copied");
    cr_expect_eq(r[63], 7);
    cr_expect_eq(r[255], 8);
    memset(r, 9, 1024);
    unsigned char *big = k8s_arena_realloc(a, r, 1024, 20000); /* past the chunk */
    cr_assert_not_null(big);
    cr_expect_eq(big[1023], 9);
    memset(big, 0, 20000);
    k8s_arena_release(a, other);
    k8s_arena_release(NULL, out);
    k8s_arena_reset(a);
    k8s_arena_free(a);
}
