/* k8s_selector: LabelSelector semantics as the API server applies a
 * webhook's namespaceSelector, and the requirement named when it fails;
 * cases in tests/fixtures/unit/selector/cases.json. */
#include <criterion/criterion.h>
#include <string.h>

#include "k8s_selector.h"
#include "test_support.h"

Test(k8s_selector, fixture_cases)
{
    json_t *cases = ts_load_json("unit/selector/cases.json");
    size_t i;
    json_t *c;
    cr_assert_gt(json_array_size(cases), 10);
    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        int want = (int)json_integer_value(json_object_get(c, "match"));
        char why[512] = "";
        int r = k8s_selector_match(json_object_get(c, "selector"), json_object_get(c, "labels"),
                                   why, sizeof(why));
        cr_expect_eq(r < 0 ? -1 : r, want, "%s: got %d (%s)", name, r, why);
        if (want < 0)
            cr_expect_eq(r, -K8S_EINVAL, "%s", name);
        const char *expect_why = json_string_value(json_object_get(c, "why"));
        if (expect_why)
            cr_expect_str_eq(why, expect_why, "%s", name);
    }
    json_decref(cases);
}

Test(k8s_selector, why_may_be_null_or_short)
{
    json_t *sel = json_pack("{s:{s:s}}", "matchLabels", "env", "prod");
    json_t *labels = json_pack("{s:s}", "env", "dev");
    cr_assert_eq(k8s_selector_match(sel, labels, NULL, 0), 0);
    char tiny[8];
    cr_assert_eq(k8s_selector_match(sel, labels, tiny, sizeof(tiny)), 0);
    cr_assert_eq(strlen(tiny), sizeof(tiny) - 1);
    json_decref(sel);
    json_decref(labels);
}
