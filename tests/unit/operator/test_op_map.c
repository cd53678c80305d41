/* op_map: which resource keys each watch event queues
 * (tests/fixtures/unit/op_map/conns.json: captures in every phase, one
 * targeting another namespace). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "op_map.h"
#include "test_support.h"

static struct k8s_map_ctx ctx;

static void setup(void)
{
    ctx.queue = k8s_queue_new(NULL);
    ctx.primary = k8s_store_new();
    k8s_store_replace_new(ctx.primary, ts_load_json("unit/op_map/conns.json"));
}

static void teardown(void)
{
    k8s_queue_free(ctx.queue);
    k8s_store_free(ctx.primary);
}

TestSuite(op_map, .init = setup, .fini = teardown);

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys queued, sorted and joined with spaces. */
static char *queued(void)
{
    char *keys[16], out[512] = "";
    size_t n = 0;
    while (k8s_queue_len(ctx.queue) && n < 16) {
        keys[n] = k8s_queue_get(ctx.queue);
        k8s_queue_done(ctx.queue, keys[n]);
        n++;
    }
    qsort(keys, n, sizeof(keys[0]), by_name);
    for (size_t i = 0; i < n; i++) {
        strcat(strcat(out, i ? " " : ""), keys[i]);
        free(keys[i]);
    }
    return strdup(out);
}

static void expect(const char *keys)
{
    char *got = queued();
    cr_assert_str_eq(got, keys);
    free(got);
}

Test(op_map, a_childs_event_queues_it_and_its_schedule)
{
    json_t *o = json_pack("{s:{s:s, s:s, s:[{s:s, s:s, s:b}, {s:s, s:s, s:b}]}}", "metadata",
                          "name", "nightly-29942230", "namespace", "ml", "ownerReferences", "kind",
                          "MLDiagnosticsConnection", "name", "nightly", "controller", 1, "kind",
                          "ConfigMap", "name", "other", "controller", 0);
    op_map_connection(&ctx, o);
    expect("ml/nightly ml/nightly-29942230");
    json_decref(o);
}

Test(op_map, a_pod_event_queues_the_unfinished_captures_targeting_its_namespace)
{
    json_t *pod = json_pack("{s:{s:s, s:s}}", "metadata", "name", "p-0", "namespace", "ml");
    op_map_namespace(&ctx, pod);
    expect("ml/new ml/pending ml/running ops/cross");
    json_decref(pod);
}

Test(op_map, a_cluster_scoped_object_queues_nothing)
{
    json_t *o = json_pack("{s:{s:s}}", "metadata", "name", "a-namespace");
    op_map_namespace(&ctx, o);
    expect("");
    json_decref(o);
}

Test(op_map, a_relist_queues_every_unfinished_capture)
{
    op_map_unfinished(&ctx, NULL);
    expect("ml/new ml/pending ml/running ops/cross ops/other");
}

Test(op_map, a_relisted_removal_is_queued_and_a_finished_change_is_not)
{
    op_map_relisted(&ctx, "ml/gone", NULL);
    expect("ml/gone");
    json_t *done = json_pack("{s:{s:s}}", "status", "phase", "Succeeded");
    op_map_relisted(&ctx, "ml/done", done);
    expect("");
    json_t *pending = json_pack("{s:{s:s}}", "status", "phase", "Pending");
    op_map_relisted(&ctx, "ml/pending", pending);
    expect("ml/pending");
    json_decref(done);
    json_decref(pending);
}
