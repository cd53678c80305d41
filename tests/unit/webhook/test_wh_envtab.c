/* wh_envtab: the table of the injected variables (DESIGN §3.5): one row
 * each, in dependency order; how a row's value and its env entry are
 * written; the $(NAME) references of a value. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "wh_envtab.h"

/* ---------- wh_env_references ---------- */

struct ref_case {
    const char *value, *name;
    bool want;
};

Test(wh_envtab, references_table)
{
    static const struct ref_case cases[] = {
        {"$(A)", "A", true},
        {"x$(A)y", "A", true},
        {"$(AB)", "A", false},
        {"$(A)", "AB", false},
        {"$$(A)", "A", false},
        {"$$$(A)", "A", true},
        {"$$$$(A)", "A", false},
        {"$(A", "A", false},
        {"$(B)$(A)", "A", true},
        {"$$(A)$(A)", "A", true},
        {"$(A$(B))", "B", false},
        {"$(A$(B))", "A", false},
        {"", "A", false},
        {"$", "A", false},
        {"A", "A", false},
        {"(A)", "A", false},
        {"$ (A)", "A", false},
        {"$(B)-$(A)", "B", true},
        {"$(OTEL_COLLECTOR_NAME).$(OTEL_COLLECTOR_NAMESPACE).svc", "OTEL_COLLECTOR_NAMESPACE",
         true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(wh_env_references(cases[i].value, cases[i].name), cases[i].want,
                     "references(\"%s\", \"%s\")", cases[i].value, cases[i].name);
    cr_expect_not(wh_env_references(NULL, "A"));
}

Test(wh_envtab, var_json_shapes)
{
    struct wh_env_var lit = {.name = "A", .value = (char *)"v"};
    struct wh_env_var ref = {.name = "B", .field_path = "spec.nodeName"};
    json_t *a = wh_env_var_json(&lit), *b = wh_env_var_json(&ref);
    char *sa = json_dumps(a, JSON_COMPACT), *sb = json_dumps(b, JSON_COMPACT);
    cr_expect_str_eq(sa, "{\"name\":\"A\",\"value\":\"v\"}");
    cr_expect_str_eq(sb, "{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\","
                         "\"fieldPath\":\"spec.nodeName\"}}}");
    free(sa);
    free(sb);
    json_decref(a);
    json_decref(b);
}

Test(wh_envtab, every_row_named_once)
{
    for (int i = 0; i < WH_ENV_COUNT; i++) {
        cr_assert_not_null(wh_env_name((enum wh_env_id)i), "row %d", i);
        for (int j = 0; j < i; j++)
            cr_expect_str_neq(wh_env_name((enum wh_env_id)i), wh_env_name((enum wh_env_id)j));
    }
    cr_expect_null(wh_env_name(WH_ENV_COUNT));
}

/* The rows' values as the table writes them: the settings', the pod's
 * identity and attributes (rl.run.id added when an rl.* key lacks one),
 * nothing for a fieldRef. */
Test(wh_envtab, values_written_from_their_sources)
{
    struct wh_config cfg;
    wh_config_init(&cfg);
    cfg.cluster_domain = "corp.example";
    cfg.otel_collector_name = "otel";
    cfg.otel_collector_namespace = "observability";
    struct wh_identity id = {.identifier = (char *)"{\"i\":1}", .metadata = (char *)"{\"m\":2}"};
    struct wh_attrs attrs;
    wh_attrs_init(&attrs);
    cr_assert_eq(wh_attrs_parse_user(&attrs, "rl.algo=ppo"), 0);
    struct wh_envtab_in in = {&cfg, &id, "svc", &attrs, "RUN"};
    static const struct {
        enum wh_env_id id;
        const char *want;
    } cases[] = {
        {WH_ENV_IDENTIFIER, "{\"i\":1}"},
        {WH_ENV_METADATA, "{\"m\":2}"},
        {WH_ENV_POD_NAME, ""},
        {WH_ENV_COLLECTOR_NAME, "otel"},
        {WH_ENV_COLLECTOR_NAMESPACE, "observability"},
        {WH_ENV_TRACES_ENDPOINT,
         "$(OTEL_COLLECTOR_NAME).$(OTEL_COLLECTOR_NAMESPACE).svc.corp.example:4317"},
        {WH_ENV_METRICS_INSECURE, "true"},
        {WH_ENV_SERVICE_NAME, "svc"},
        {WH_ENV_RESOURCE_ATTRIBUTES, "rl.algo=ppo,rl.run.id=RUN"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct k8s_buf b;
        k8s_buf_init(&b, 1 << 20);
        cr_assert_eq(wh_envtab_write_value(cases[i].id, &in, &b), 0);
        cr_assert_eq(b.len, strlen(cases[i].want) + 1, "%s", wh_env_name(cases[i].id));
        cr_expect_str_eq(b.data, cases[i].want);
        k8s_buf_done(&b);
    }
    wh_attrs_done(&attrs);
    wh_config_done(&cfg);
}

/* The signals and the split between the settings' rows and the pod's. */
Test(wh_envtab, signals_and_per_pod_rows)
{
    cr_expect_eq(wh_envtab_signal(WH_ENV_METRICS_ENDPOINT), WH_ENV_SIG_METRICS);
    cr_expect_eq(wh_envtab_signal(WH_ENV_METRICS_INSECURE), WH_ENV_SIG_METRICS);
    cr_expect_eq(wh_envtab_signal(WH_ENV_TRACES_ENDPOINT), WH_ENV_SIG_TRACES);
    cr_expect_eq(wh_envtab_signal(WH_ENV_TRACES_INSECURE), WH_ENV_SIG_TRACES);
    cr_expect_eq(wh_envtab_signal(WH_ENV_SERVICE_NAME), 0);
    static const enum wh_env_id per_pod[] = {WH_ENV_IDENTIFIER, WH_ENV_METADATA,
                                             WH_ENV_SERVICE_NAME, WH_ENV_RESOURCE_ATTRIBUTES};
    int n = 0;
    for (int i = 0; i < WH_ENV_COUNT; i++)
        n += wh_envtab_per_pod((enum wh_env_id)i);
    cr_expect_eq(n, 4);
    for (size_t i = 0; i < sizeof(per_pod) / sizeof(per_pod[0]); i++)
        cr_expect(wh_envtab_per_pod(per_pod[i]), "%s", wh_env_name(per_pod[i]));
}

/* A row pointed into its buffers: value and entry found there, and its
 * references parsed into ref[] and the ids of ours it needs. */
Test(wh_envtab, point_parses_references)
{
    static const char values[] = "x\0$(OTEL_COLLECTOR_NAME).$$(X).$(OTEL_COLLECTOR_NAMESPACE):1";
    static const char entries[] = "[entry]";
    struct wh_env_var v;
    wh_env_var_init(&v, WH_ENV_METRICS_ENDPOINT);
    cr_expect_str_eq(v.name, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
    cr_expect_eq(v.name_len, strlen(v.name));
    cr_expect_null(v.field_path);
    wh_env_var_point(&v, values, 2, entries, 1);
    cr_expect_eq(v.value, values + 2);
    cr_expect_eq(v.entry, entries + 1);
    cr_assert_eq(v.n_refs, 2, "$$( is no reference");
    cr_expect_eq(v.ref_len[0], strlen("OTEL_COLLECTOR_NAME"));
    cr_expect_eq(strncmp(v.ref[1], "OTEL_COLLECTOR_NAMESPACE", v.ref_len[1]), 0);
    cr_expect_eq(v.needs, 1u << WH_ENV_COLLECTOR_NAME | 1u << WH_ENV_COLLECTOR_NAMESPACE);
    wh_env_var_init(&v, WH_ENV_NODE_NAME); /* a fieldRef: no value to point at */
    cr_expect_str_eq(v.field_path, "spec.nodeName");
    wh_env_var_point(&v, values, 2, entries, 0);
    cr_expect_null(v.value);
    cr_expect_eq(v.n_refs, 0);
    cr_expect_eq(v.needs, 0);
}

/* The entry written before is copied, byte for byte; else written. */
Test(wh_envtab, append_copies_the_written_entry)
{
    struct wh_env_var v = {.name = "A", .value = "v"};
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    cr_assert_eq(wh_env_var_append(&v, &b), 0);
    v.entry = "{\"name\":\"A\",\"value\":\"cached\"}";
    v.entry_len = strlen(v.entry);
    cr_assert_eq(wh_env_var_append(&v, &b), 0);
    cr_assert_eq(k8s_buf_append(&b, "", 1), 0);
    cr_expect_str_eq(b.data,
                     "{\"name\":\"A\",\"value\":\"v\"}{\"name\":\"A\",\"value\":\"cached\"}");
    k8s_buf_done(&b);
}
