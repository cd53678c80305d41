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
