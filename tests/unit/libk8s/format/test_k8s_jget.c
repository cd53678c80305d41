/* k8s_jget: string members one and two levels down, NULL for anything
 * missing or of another type at any level; the controller's owner
 * reference among several. */
#include <criterion/criterion.h>

#include "k8s_jget.h"

Test(k8s_jget, strings_one_and_two_levels_down)
{
    json_t *o = json_pack("{s:{s:s, s:i}, s:s, s:[]}", "metadata", "name", "n", "generation", 3,
                          "kind", "Pod", "list");
    cr_expect_str_eq(k8s_jstr(o, "kind"), "Pod");
    cr_expect_str_eq(k8s_jstr2(o, "metadata", "name"), "n");
    cr_expect_null(k8s_jstr2(o, "metadata", "generation"), "not a string");
    cr_expect_null(k8s_jstr2(o, "metadata", "absent"));
    cr_expect_null(k8s_jstr2(o, "kind", "name"), "the first level is not an object");
    cr_expect_null(k8s_jstr2(o, "list", "name"));
    cr_expect_null(k8s_jstr2(NULL, "metadata", "name"));
    cr_expect_null(k8s_jstr(NULL, "kind"));
    json_decref(o);
}

Test(k8s_jget, the_controller_among_the_owners)
{
    json_t *o =
        json_pack("{s:{s:[{s:s}, {s:s, s:b}, {s:s, s:b}]}}", "metadata", "ownerReferences", "name",
                  "plain", "name", "not", "controller", 0, "name", "boss", "controller", 1);
    cr_expect_str_eq(k8s_jstr(k8s_controller_ref(o), "name"), "boss");
    json_t *none = json_pack("{s:{s:[{s:s}]}}", "metadata", "ownerReferences", "name", "plain");
    cr_expect_null(k8s_controller_ref(none));
    cr_expect_null(k8s_controller_ref(NULL));
    json_decref(o);
    json_decref(none);
}
