/* wh_envbase: the injected variables the settings alone fix, written once
 * per configuration: their values and entries, and whether a base still
 * matches the settings it is asked for. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "wh_envbase.h"

static struct wh_config cfg;

static void setup(void)
{
    wh_config_init(&cfg);
    cfg.cluster_domain = "corp.example";
    cfg.otel_collector_name = "otel";
    cfg.otel_collector_namespace = "observability";
}

static void teardown(void)
{
    wh_config_done(&cfg);
}

TestSuite(wh_envbase, .init = setup, .fini = teardown);

/* The entry of a base's row as a string (for the assertions). */
static char *entry_of(const struct wh_envbase *base, enum wh_env_id id)
{
    const struct wh_env_var *v = &wh_envbase_vars(base)[id];
    cr_assert_not_null(v->entry, "%s has no entry", wh_env_name(id));
    return strndup(v->entry, v->entry_len);
}

Test(wh_envbase, settings_rows_written_once)
{
    struct wh_envbase *base = wh_envbase_new(&cfg);
    cr_assert_not_null(base);
    for (int j = 0; j < WH_ENV_COUNT; j++) {
        const struct wh_env_var *v = &wh_envbase_vars(base)[j];
        if (wh_envtab_per_pod((enum wh_env_id)j)) {
            cr_expect_null(v->entry, "%s is the pod's", wh_env_name((enum wh_env_id)j));
            continue;
        }
        cr_expect_eq(v->id, (enum wh_env_id)j);
        cr_expect_str_eq(v->name, wh_env_name((enum wh_env_id)j));
        cr_expect(v->value || v->field_path, "%s", v->name);
    }
    const struct wh_env_var *ep = &wh_envbase_vars(base)[WH_ENV_METRICS_ENDPOINT];
    cr_expect_str_eq(ep->value,
                     "$(OTEL_COLLECTOR_NAME).$(OTEL_COLLECTOR_NAMESPACE).svc.corp.example:4317");
    cr_expect_eq(ep->needs, 1u << WH_ENV_COLLECTOR_NAME | 1u << WH_ENV_COLLECTOR_NAMESPACE);
    char *name = entry_of(base, WH_ENV_COLLECTOR_NAME), *node = entry_of(base, WH_ENV_NODE_NAME);
    cr_expect_str_eq(name, "{\"name\":\"OTEL_COLLECTOR_NAME\",\"value\":\"otel\"}");
    cr_expect_str_eq(node,
                     "{\"name\":\"OTEL_RESOURCE_ATTRIBUTES_NODE_NAME\",\"valueFrom\":"
                     "{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"spec.nodeName\"}}}");
    free(name);
    free(node);
    wh_envbase_free(base);
    wh_envbase_free(NULL);
}

/* cfg's base serves only the settings it was written for. */
Test(wh_envbase, of_matches_the_current_settings)
{
    cr_expect_null(wh_envbase_of(&cfg), "no base before wh_config_finish");
    cr_assert_eq(wh_config_finish(&cfg, NULL), 0);
    const struct wh_envbase *base = wh_envbase_of(&cfg);
    cr_assert_not_null(base);
    cr_expect_eq(base, cfg.env_base);
    cr_expect_str_eq(wh_envbase_vars(base)[WH_ENV_COLLECTOR_NAMESPACE].value, "observability");
    static const char *other = "elsewhere";
    cfg.otel_collector_namespace = other;
    cr_expect_null(wh_envbase_of(&cfg), "a base of other settings is never used");
}
