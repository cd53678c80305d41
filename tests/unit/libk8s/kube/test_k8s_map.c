/* k8s_map: the mapper of a primary resource's own event queues its key. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "k8s_map.h"

static struct k8s_map_ctx ctx;

static void setup(void)
{
    ctx.queue = k8s_queue_new(NULL);
}

static void teardown(void)
{
    k8s_queue_free(ctx.queue);
}

TestSuite(k8s_map, .init = setup, .fini = teardown);

Test(k8s_map, a_resource_event_queues_the_resource)
{
    json_t *o = json_pack("{s:{s:s, s:s}}", "metadata", "name", "done", "namespace", "ml");
    k8s_map_self(&ctx, o);
    cr_assert_eq(k8s_queue_len(ctx.queue), 1);
    char *key = k8s_queue_get(ctx.queue);
    cr_assert_str_eq(key, "ml/done");
    k8s_queue_done(ctx.queue, key);
    free(key);
    json_decref(o);
}

Test(k8s_map, an_object_without_a_name_queues_nothing)
{
    json_t *o = json_pack("{s:{s:s}}", "metadata", "namespace", "ml");
    k8s_map_self(&ctx, o);
    cr_assert_eq(k8s_queue_len(ctx.queue), 0);
    json_decref(o);
}
