/* op_capture_trim: the connections cache keeps terminal resources without
 * status.hosts (never reconciled again) and everything else untouched. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "op_capture.h"

static json_t *conn(const char *phase)
{
    return json_pack("{s:{s:s, s:s}, s:{s:i}, s:{s:s, s:s, s:[{s:s}, {s:s}], s:i}}", "metadata",
                     "name", "c", "namespace", "ml", "spec", "gen", 1, "status", "phase", phase,
                     "sessionId", "2026_11_30_04_17_10", "hosts", "pod", "a", "pod", "b",
                     "attempts", 1);
}

Test(capture_trim, terminal_resources_drop_hosts)
{
    const char *terminal[] = {"Succeeded", "Failed"};
    for (int i = 0; i < 2; i++) {
        json_t *obj = conn(terminal[i]);
        json_t *kept = op_capture_trim(obj);
        cr_assert(kept && kept != obj);
        json_t *st = json_object_get(kept, "status");
        cr_assert_null(json_object_get(st, "hosts"));
        cr_assert_str_eq(json_string_value(json_object_get(st, "phase")), terminal[i]);
        cr_assert_str_eq(json_string_value(json_object_get(st, "sessionId")),
                         "2026_11_30_04_17_10");
        cr_assert(json_equal(json_object_get(kept, "metadata"), json_object_get(obj, "metadata")));
        /* the object it was given is untouched */
        cr_assert_eq(json_array_size(json_object_get(json_object_get(obj, "status"), "hosts")), 2);
        json_decref(kept);
        json_decref(obj);
    }
}

Test(capture_trim, live_and_new_resources_are_kept_whole)
{
    const char *live[] = {"Pending", "Running"};
    for (int i = 0; i < 2; i++) {
        json_t *obj = conn(live[i]);
        json_t *kept = op_capture_trim(obj);
        cr_assert_eq(kept, obj); /* the same object, a new reference */
        json_decref(kept);
        json_decref(obj);
    }
    json_t *bare = json_pack("{s:{s:s}}", "metadata", "name", "new");
    json_t *kept = op_capture_trim(bare);
    cr_assert_eq(kept, bare);
    json_decref(kept);
    json_decref(bare);
}
