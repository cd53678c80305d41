/* wh_env: the injected variables of one pod (DESIGN §3.5) and the JSON Patch that
 * adds them to one container: order by $(…) dependencies, user names never
 * overwritten, OTEL_RESOURCE_ATTRIBUTES merged key by key, the user's own
 * OpenTelemetry settings taking precedence (each skip warned). Patches are
 * checked by applying them with k8s_jsonpatch_apply. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jsonpatch.h"
#include "k8s_mlrun.h"
#include "wh_env.h"
#include "test_support.h"

#define CPATH "/spec/containers/0"
#define IDENT                                                                                      \
    "{\"metadata.name\":\"train\",\"metadata.kind\":\"JobSet\",\"clustername\":"                   \
    "\"projects/p/locations/l/clusters/prod\",\"namespace\":\"team-a\"}"
#define META                                                                                       \
    "{\"parent-workload\":\"Job/train-workers-0\",\"creation-timestamp\":"                         \
    "\"2024-03-05T07:08:09Z\",\"associated-labels\":\"team=ml\"}"
/* sha256("prod_team-a_JobSet_train_20240305-070809"): the SDK's formula
 * (k8s_mlrun, checked against the SDK's own vectors) for IDENT and META */
#define RUN_ID "8ee0853e49ec410d0cdc1c64cc84bedce1ad0e261ac68be0dba8d9db7a75c9b1"
#define OUR_ATTRS                                                                                  \
    "service.namespace=team-a,k8s.namespace.name=team-a,k8s.pod.name=$(OTEL_RESOURCE_"             \
    "ATTRIBUTES_POD_NAME),k8s.pod.uid=$(OTEL_RESOURCE_ATTRIBUTES_POD_UID),k8s.node.name=$("        \
    "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME),k8s.cluster.name=prod,k8s.jobset.name=train"

static struct wh_config cfg;
static struct wh_envset set;
static json_t *containers;

static void setup(void)
{
    wh_config_init(&cfg);
    cfg.cluster_name = "projects/p/locations/l/clusters/prod";
    cfg.cluster_domain = "cluster.local";
    cfg.otel_collector_name = "opentelemetry-collector";
    cfg.otel_collector_namespace = "gke-managed-otel";
    containers = ts_load_json("unit/env/containers.json");
    memset(&set, 0, sizeof(set));
}

static void teardown(void)
{
    wh_envset_done(&set);
    json_decref(containers);
    wh_config_done(&cfg);
}

TestSuite(wh_env, .init = setup, .fini = teardown);

/* Our set for the JobSet "train"; extra: more attributes ("k=v,..." or
 * NULL); run_id: whether the ML run id is known. */
static void build(const char *extra, bool run_id)
{
    struct wh_identity id = {.identifier = strdup(IDENT), .metadata = strdup(META)};
    if (run_id)
        snprintf(id.run_id, sizeof(id.run_id), "%s", RUN_ID);
    struct wh_attrs a;
    wh_attrs_init(&a);
    cr_assert_eq(wh_attrs_parse_user(&a, OUR_ATTRS), 0); /* written form */
    if (extra)
        cr_assert_eq(wh_attrs_parse_user(&a, extra), 0);
    cr_assert_eq(wh_envset_build(&set, &cfg, &id, "train", &a), 0);
    cr_expect_eq(a.n, 0, "attrs are moved into the set");
    cr_expect_null(a.kv);
    wh_identity_done(&id);
}

static const json_t *container(const char *key)
{
    const json_t *c = json_object_get(containers, key);
    cr_assert_not_null(c, "no container fixture %s", key);
    return c;
}

struct result {
    json_t *patch, *warn, *pod, *env;
    int added;
};

/* Run wh_env_patch over containers[key] and apply the patch to a pod
 * holding that container. */
static void run(const char *key, bool merge, struct result *r)
{
    const json_t *c = container(key);
    r->patch = json_array();
    r->warn = json_array();
    r->added = -1;
    cr_assert_eq(wh_env_patch(&set, c, CPATH, merge, r->patch, r->warn, &r->added), 0);
    json_t *doc = json_pack("{s:{s:[O]}}", "spec", "containers", c);
    struct k8s_error err = {0};
    r->pod = NULL;
    int rc = k8s_jsonpatch_apply(doc, r->patch, &r->pod, &err);
    cr_assert_eq(rc, 0, "%s: patch does not apply: %s", key, err.message);
    json_decref(doc);
    r->env = json_object_get(
        json_array_get(json_object_get(json_object_get(r->pod, "spec"), "containers"), 0), "env");
}

static void release(struct result *r)
{
    json_decref(r->patch);
    json_decref(r->warn);
    json_decref(r->pod);
}

/* The patch is one operation writing the container's env whole (path
 * CPATH/env), and every entry of the container's own env but the one at
 * `rewritten` (SIZE_MAX: none) is in it unchanged, in its order. */
static void expect_whole_env(const struct result *r, const char *key, size_t rewritten)
{
    cr_assert_eq(json_array_size(r->patch), 1, "%s: one operation", key);
    const json_t *op = json_array_get(r->patch, 0);
    cr_expect_str_eq(json_string_value(json_object_get(op, "op")), "add", "%s", key);
    cr_expect_str_eq(json_string_value(json_object_get(op, "path")), CPATH "/env", "%s", key);
    const json_t *value = json_object_get(op, "value"),
                 *mine = json_object_get(container(key), "env");
    cr_expect(json_equal(value, r->env), "%s: the value is the env it ends with", key);
    size_t at = 0;
    for (size_t i = 0; i < json_array_size(mine); i++) {
        if (i == rewritten)
            continue;
        while (at < json_array_size(value) &&
               !json_equal(json_array_get(value, at), json_array_get(mine, i)))
            at++;
        cr_expect_lt(at, json_array_size(value), "%s: user entry %zu not kept as given", key, i);
    }
}

/* "A,B,C" of the env names. */
static char *names(const json_t *env)
{
    size_t i, len = 0;
    json_t *e;
    char *out = calloc(1, 4096);
    json_array_foreach(env, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        len += (size_t)snprintf(out + len, 4096 - len, "%s%s", i ? "," : "", n ? n : "?");
    }
    return out;
}

static const json_t *find_var(const json_t *env, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && !strcmp(n, name))
            return e;
    }
    return NULL;
}

static const char *value_of(const json_t *env, const char *name)
{
    return json_string_value(json_object_get(find_var(env, name), "value"));
}

/* Names unique; every $(NAME) reference points at an earlier variable. */
static void check_env_invariants(const json_t *env, const char *what)
{
    size_t n = json_array_size(env);
    for (size_t i = 0; i < n; i++) {
        const char *ni = json_string_value(json_object_get(json_array_get(env, i), "name"));
        if (!ni)
            continue;
        for (size_t j = 0; j < n; j++) {
            const char *nj = json_string_value(json_object_get(json_array_get(env, j), "name"));
            const char *vj = json_string_value(json_object_get(json_array_get(env, j), "value"));
            if (!nj || i == j)
                continue;
            cr_expect(strcmp(ni, nj) || i == j, "%s: duplicate env name %s", what, ni);
            if (vj && wh_env_references(vj, ni))
                cr_expect_lt(i, j, "%s: %s (at %zu) references %s defined later (at %zu)", what, nj,
                             j, ni, i);
        }
    }
}

/* The same run over the patched container yields nothing new. */
static void check_idempotent(const struct result *r, bool merge)
{
    const json_t *c =
        json_array_get(json_object_get(json_object_get(r->pod, "spec"), "containers"), 0);
    json_t *patch = json_array(), *warn = json_array();
    int added = -1;
    cr_assert_eq(wh_env_patch(&set, c, CPATH, merge, patch, warn, &added), 0);
    char *s = json_dumps(patch, JSON_COMPACT);
    cr_expect_eq(json_array_size(patch), 0, "second run not empty: %s", s);
    cr_expect_eq(added, 0);
    free(s);
    json_decref(patch);
    json_decref(warn);
}

static void expect_warnings(const json_t *w, const char *const *want, size_t n)
{
    cr_expect_eq(json_array_size(w), n, "warnings: %zu want %zu", json_array_size(w), n);
    for (size_t i = 0; i < n && i < json_array_size(w); i++)
        cr_expect_str_eq(json_string_value(json_array_get(w, i)), want[i]);
}

#define ALL_NAMES                                                                                  \
    "GKE_DIAGON_IDENTIFIER,GKE_DIAGON_METADATA,OTEL_RESOURCE_ATTRIBUTES_POD_NAME,"                 \
    "OTEL_RESOURCE_ATTRIBUTES_POD_UID,OTEL_RESOURCE_ATTRIBUTES_NODE_NAME,OTEL_COLLECTOR_NAME,"     \
    "OTEL_COLLECTOR_NAMESPACE,OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,"                                \
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,OTEL_EXPORTER_OTLP_METRICS_INSECURE,"                      \
    "OTEL_EXPORTER_OTLP_TRACES_INSECURE,OTEL_SERVICE_NAME,OTEL_RESOURCE_ATTRIBUTES"

/* ---------- the set ---------- */

Test(wh_env, envset_json_exact)
{
    build(NULL, true);
    cr_expect_eq(set.n, WH_ENV_COUNT);
    cr_expect_str_eq(set.run_id, RUN_ID);
    json_t *got = wh_envset_json(&set);
    json_t *want = ts_load_json("unit/env/envset.json");
    char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
    cr_expect(json_equal(got, want), "got %s\nwant %s", g, w);
    free(g);
    free(w);
    check_env_invariants(got, "envset");
    json_decref(got);
    json_decref(want);
}

Test(wh_env, envset_uses_config)
{
    cfg.cluster_domain = "corp.example";
    cfg.otel_collector_name = "otel";
    cfg.otel_collector_namespace = "observability";
    build(NULL, false);
    json_t *env = wh_envset_json(&set);
    cr_expect_str_eq(value_of(env, "OTEL_COLLECTOR_NAME"), "otel");
    cr_expect_str_eq(value_of(env, "OTEL_COLLECTOR_NAMESPACE"), "observability");
    cr_expect_str_eq(value_of(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
                     "$(OTEL_COLLECTOR_NAME).$(OTEL_COLLECTOR_NAMESPACE).svc.corp.example:4317");
    cr_expect_str_eq(value_of(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
                     "$(OTEL_COLLECTOR_NAME).$(OTEL_COLLECTOR_NAMESPACE).svc.corp.example:4317");
    json_decref(env);
}

Test(wh_env, rl_key_adds_run_id_when_known)
{
    build("rl.algo=ppo", true);
    json_t *env = wh_envset_json(&set);
    cr_expect_str_eq(value_of(env, "OTEL_RESOURCE_ATTRIBUTES"),
                     OUR_ATTRS ",rl.algo=ppo,rl.run.id=" RUN_ID);
    cr_expect_null(wh_attrs_get(&set.attrs, "rl.run.id"), "set.attrs stays without rl.run.id");
    json_decref(env);
}

Test(wh_env, rl_key_without_run_id)
{
    build("rl.algo=ppo", false);
    json_t *env = wh_envset_json(&set);
    cr_expect_str_eq(value_of(env, "OTEL_RESOURCE_ATTRIBUTES"), OUR_ATTRS ",rl.algo=ppo");
    json_decref(env);
}

Test(wh_env, rl_run_id_given_is_kept)
{
    build("rl.algo=ppo,rl.run.id=mine", true);
    json_t *env = wh_envset_json(&set);
    cr_expect_str_eq(value_of(env, "OTEL_RESOURCE_ATTRIBUTES"),
                     OUR_ATTRS ",rl.algo=ppo,rl.run.id=mine");
    json_decref(env);
}

Test(wh_env, no_rl_key_no_run_id_attr)
{
    build(NULL, true);
    json_t *env = wh_envset_json(&set);
    cr_expect_str_eq(value_of(env, "OTEL_RESOURCE_ATTRIBUTES"), OUR_ATTRS);
    json_decref(env);
}

/* ---------- patches ---------- */

Test(wh_env, no_env_one_add_with_everything)
{
    build(NULL, true);
    const char *keys[] = {"no-env", "env-null"};
    for (size_t k = 0; k < 2; k++) {
        struct result r;
        run(keys[k], true, &r);
        cr_assert_eq(json_array_size(r.patch), 1, "%s", keys[k]);
        json_t *op = json_array_get(r.patch, 0);
        cr_expect_str_eq(json_string_value(json_object_get(op, "op")), "add");
        cr_expect_str_eq(json_string_value(json_object_get(op, "path")), CPATH "/env");
        json_t *want = ts_load_json("unit/env/envset.json");
        cr_expect(json_equal(json_object_get(op, "value"), want), "%s", keys[k]);
        json_decref(want);
        cr_expect_eq(r.added, WH_ENV_COUNT);
        cr_expect_eq(json_array_size(r.warn), 0);
        check_idempotent(&r, true);
        release(&r);
    }
}

Test(wh_env, existing_env_written_whole_in_order)
{
    build(NULL, true);
    const char *keys[] = {"env-empty", "env-user"};
    for (size_t k = 0; k < 2; k++) {
        struct result r;
        run(keys[k], true, &r);
        json_t *want = ts_load_json("unit/env/envset.json");
        expect_whole_env(&r, keys[k], SIZE_MAX);
        size_t skip = k == 0 ? 0 : 1; /* USER_A first */
        for (size_t i = 0; i < WH_ENV_COUNT; i++)
            cr_expect(json_equal(json_array_get(r.env, skip + i), json_array_get(want, i)),
                      "%s #%zu", keys[k], i);
        json_decref(want);
        cr_expect_eq(r.added, WH_ENV_COUNT);
        char *n = names(r.env);
        cr_expect_str_eq(n, k == 0 ? ALL_NAMES : "USER_A," ALL_NAMES);
        free(n);
        check_env_invariants(r.env, keys[k]);
        check_idempotent(&r, true);
        release(&r);
    }
}

Test(wh_env, user_var_referencing_ours_gets_it_first)
{
    build(NULL, true);
    struct result r;
    run("user-refs-ours", true, &r);
    char *n = names(r.env);
    cr_expect_str_eq(n, "OTEL_SERVICE_NAME,FOO,BAR,GKE_DIAGON_IDENTIFIER,GKE_DIAGON_METADATA,"
                        "OTEL_RESOURCE_ATTRIBUTES_POD_NAME,OTEL_RESOURCE_ATTRIBUTES_POD_UID,"
                        "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME,OTEL_COLLECTOR_NAME,"
                        "OTEL_COLLECTOR_NAMESPACE,OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,"
                        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,"
                        "OTEL_EXPORTER_OTLP_METRICS_INSECURE,OTEL_EXPORTER_OTLP_TRACES_INSECURE,"
                        "OTEL_RESOURCE_ATTRIBUTES");
    free(n);
    expect_whole_env(&r, "user-refs-ours", SIZE_MAX);
    cr_expect_eq(r.added, WH_ENV_COUNT);
    cr_expect_eq(json_array_size(r.warn), 0);
    check_env_invariants(r.env, "user-refs-ours");
    check_idempotent(&r, true);
    release(&r);
}

Test(wh_env, user_var_referencing_endpoint_gets_its_dependencies_first)
{
    build(NULL, true);
    struct result r;
    run("user-refs-endpoint", true, &r);
    char *n = names(r.env);
    cr_expect_str_eq(n, "A,OTEL_COLLECTOR_NAME,OTEL_COLLECTOR_NAMESPACE,"
                        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,EP,Z,GKE_DIAGON_IDENTIFIER,"
                        "GKE_DIAGON_METADATA,OTEL_RESOURCE_ATTRIBUTES_POD_NAME,"
                        "OTEL_RESOURCE_ATTRIBUTES_POD_UID,OTEL_RESOURCE_ATTRIBUTES_NODE_NAME,"
                        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,"
                        "OTEL_EXPORTER_OTLP_METRICS_INSECURE,OTEL_EXPORTER_OTLP_TRACES_INSECURE,"
                        "OTEL_SERVICE_NAME,"
                        "OTEL_RESOURCE_ATTRIBUTES");
    free(n);
    cr_expect_str_eq(value_of(r.env, "Z"), "$(A)");
    check_env_invariants(r.env, "user-refs-endpoint");
    check_idempotent(&r, true);
    release(&r);
}

Test(wh_env, ours_referencing_user_var_placed_between)
{
    build("team=$(TEAM)", true);
    struct result r;
    run("user-refs-attrs", true, &r);
    char *n = names(r.env);
    cr_expect_str_eq(
        n,
        "TEAM,OTEL_RESOURCE_ATTRIBUTES_POD_NAME,OTEL_RESOURCE_ATTRIBUTES_POD_UID,"
        "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME,OTEL_RESOURCE_ATTRIBUTES,FOO,"
        "GKE_DIAGON_IDENTIFIER,GKE_DIAGON_METADATA,OTEL_COLLECTOR_NAME,"
        "OTEL_COLLECTOR_NAMESPACE,OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,"
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,"
        "OTEL_EXPORTER_OTLP_METRICS_INSECURE,OTEL_EXPORTER_OTLP_TRACES_INSECURE,OTEL_SERVICE_NAME");
    free(n);
    cr_expect_eq(json_array_size(r.warn), 0);
    check_env_invariants(r.env, "user-refs-attrs");
    check_idempotent(&r, true);
    release(&r);
}

Test(wh_env, escaped_reference_is_not_a_dependency)
{
    build(NULL, true);
    struct result r;
    run("user-escaped-ref", true, &r);
    char *n = names(r.env);
    cr_expect_str_eq(n, "FOO," ALL_NAMES);
    free(n);
    release(&r);
}

Test(wh_env, cycle_appends_at_end_with_warning)
{
    build("x=$(FOO)", true);
    struct result r;
    run("cycle", true, &r);
    char *n = names(r.env);
    cr_expect_str_eq(n, "FOO," ALL_NAMES);
    free(n);
    const char *want[] = {"container main: env references form a cycle with injected variables; "
                          "appended at the end"};
    expect_warnings(r.warn, want, 1);
    release(&r);
}

Test(wh_env, ours_needing_a_later_user_var_is_a_cycle)
{
    build(NULL, true);
    struct result r;
    run("ours-need-later-user", true, &r);
    char *n = names(r.env);
    cr_expect_str_eq(n, "EP,OTEL_COLLECTOR_NAME,GKE_DIAGON_IDENTIFIER,GKE_DIAGON_METADATA,"
                        "OTEL_RESOURCE_ATTRIBUTES_POD_NAME,OTEL_RESOURCE_ATTRIBUTES_POD_UID,"
                        "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME,OTEL_COLLECTOR_NAMESPACE,"
                        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,"
                        "OTEL_EXPORTER_OTLP_METRICS_INSECURE,OTEL_EXPORTER_OTLP_TRACES_INSECURE,"
                        "OTEL_SERVICE_NAME,OTEL_RESOURCE_ATTRIBUTES");
    free(n);
    cr_expect_eq(json_array_size(r.warn), 1);
    cr_expect_str_eq(value_of(r.env, "OTEL_COLLECTOR_NAME"), "mine");
    release(&r);
}

Test(wh_env, user_set_names_never_overwritten)
{
    build(NULL, true);
    struct result r;
    run("user-set-names", true, &r);
    cr_expect_eq(r.added, WH_ENV_COUNT - 3);
    expect_whole_env(&r, "user-set-names", SIZE_MAX);
    cr_expect_str_eq(value_of(r.env, "OTEL_SERVICE_NAME"), "mine");
    cr_expect_str_eq(value_of(r.env, "GKE_DIAGON_IDENTIFIER"), "custom");
    cr_expect_not_null(json_object_get(find_var(r.env, "OTEL_COLLECTOR_NAME"), "valueFrom"));
    cr_expect_eq(json_array_size(r.env), WH_ENV_COUNT);
    check_env_invariants(r.env, "user-set-names");
    check_idempotent(&r, true);
    release(&r);
}

Test(wh_env, user_attrs_merged_with_replace)
{
    build(NULL, true);
    struct result r;
    run("user-attrs", true, &r);
    expect_whole_env(&r, "user-attrs", 0);
    const char *merged =
        "team=ml,k8s.pod.name=custom,service.namespace=team-a,k8s.namespace.name=team-a,"
        "k8s.pod.uid=$(OTEL_RESOURCE_ATTRIBUTES_POD_UID),k8s.node.name=$(OTEL_RESOURCE_"
        "ATTRIBUTES_NODE_NAME),k8s.cluster.name=prod,k8s.jobset.name=train";
    json_t *entry = json_pack("{s:s,s:s}", "name", "OTEL_RESOURCE_ATTRIBUTES", "value", merged);
    cr_expect(json_equal(json_array_get(r.env, 2), entry), "the merged entry: name and value");
    json_decref(entry);
    cr_expect_str_eq(value_of(r.env, "OTEL_RESOURCE_ATTRIBUTES"), merged);
    /* the merged value now references POD_UID and NODE_NAME: they go first */
    char *n = names(r.env);
    cr_expect_str_eq(
        n,
        "OTEL_RESOURCE_ATTRIBUTES_POD_UID,OTEL_RESOURCE_ATTRIBUTES_NODE_NAME,"
        "OTEL_RESOURCE_ATTRIBUTES,GKE_DIAGON_IDENTIFIER,GKE_DIAGON_METADATA,"
        "OTEL_RESOURCE_ATTRIBUTES_POD_NAME,OTEL_COLLECTOR_NAME,"
        "OTEL_COLLECTOR_NAMESPACE,OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,"
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,"
        "OTEL_EXPORTER_OTLP_METRICS_INSECURE,OTEL_EXPORTER_OTLP_TRACES_INSECURE,OTEL_SERVICE_NAME");
    free(n);
    cr_expect_eq(r.added, WH_ENV_COUNT, "all but one added + 1 merged");
    check_env_invariants(r.env, "user-attrs");
    check_idempotent(&r, true);
    release(&r);
}

Test(wh_env, user_attrs_complete_left_byte_identical)
{
    build(NULL, true);
    struct result r;
    run("user-attrs-complete", true, &r);
    expect_whole_env(&r, "user-attrs-complete", SIZE_MAX);
    cr_expect_str_eq(
        value_of(r.env, "OTEL_RESOURCE_ATTRIBUTES"),
        json_string_value(json_object_get(
            json_array_get(json_object_get(container("user-attrs-complete"), "env"), 1), "value")));
    cr_expect_eq(r.added, WH_ENV_COUNT - 1);
    release(&r);
}

Test(wh_env, merge_false_leaves_user_attrs)
{
    build(NULL, true);
    struct result r;
    run("user-attrs", false, &r);
    expect_whole_env(&r, "user-attrs", SIZE_MAX);
    cr_expect_str_eq(value_of(r.env, "OTEL_RESOURCE_ATTRIBUTES"), "team=ml,k8s.pod.name=custom");
    cr_expect_eq(r.added, WH_ENV_COUNT - 1);
    cr_expect_eq(json_array_size(r.warn), 0);
    check_env_invariants(r.env, "merge=false");
    check_idempotent(&r, false);
    release(&r);
}

Test(wh_env, valuefrom_user_attrs_not_merged)
{
    build(NULL, true);
    struct result r;
    run("user-attrs-valuefrom", true, &r);
    const char *want[] = {
        "container main: OTEL_RESOURCE_ATTRIBUTES comes from valueFrom; not merged"};
    expect_warnings(r.warn, want, 1);
    cr_expect_eq(r.added, WH_ENV_COUNT - 1);
    cr_expect_not_null(json_object_get(find_var(r.env, "OTEL_RESOURCE_ATTRIBUTES"), "valueFrom"));
    cr_expect_eq(json_array_size(r.env), WH_ENV_COUNT);
    release(&r);
}

Test(wh_env, user_rl_key_gets_run_id)
{
    build(NULL, true);
    struct result r;
    run("user-attrs-rl", true, &r);
    const char *v = value_of(r.env, "OTEL_RESOURCE_ATTRIBUTES");
    cr_assert_not_null(v);
    cr_expect_eq(strncmp(v, "rl.env=atari,service.namespace=team-a,", 38), 0, "%s", v);
    const char *tail = ",rl.run.id=" RUN_ID;
    cr_expect_str_eq(v + strlen(v) - strlen(tail), tail);
    cr_expect_eq(json_array_size(r.warn), 0);
    check_idempotent(&r, true);
    release(&r);
}

Test(wh_env, user_rl_key_unknown_run_id_warns)
{
    build(NULL, false);
    struct result r;
    run("user-attrs-rl", true, &r);
    const char *v = value_of(r.env, "OTEL_RESOURCE_ATTRIBUTES");
    cr_expect_null(strstr(v, "rl.run.id"), "%s", v);
    const char *want[] = {"container main: rl.run.id not added: the ML run id is unknown"};
    expect_warnings(r.warn, want, 1);
    release(&r);
}

Test(wh_env, user_rl_run_id_kept)
{
    build("rl.algo=ppo", true);
    struct result r;
    run("user-attrs-rl-id", true, &r);
    const char *v = value_of(r.env, "OTEL_RESOURCE_ATTRIBUTES");
    cr_expect_not_null(strstr(v, "rl.env=atari,rl.run.id=mine,"), "%s", v);
    cr_expect_null(strstr(v, RUN_ID), "%s", v);
    cr_expect_not_null(strstr(v, ",rl.algo=ppo"), "%s", v);
    release(&r);
}

Test(wh_env, env_not_a_list_warns_without_ops)
{
    build(NULL, true);
    json_t *patch = json_array(), *warn = json_array();
    int added = -1;
    cr_assert_eq(wh_env_patch(&set, container("env-not-list"), CPATH, true, patch, warn, &added),
                 0);
    cr_expect_eq(json_array_size(patch), 0);
    cr_expect_eq(added, 0);
    const char *want[] = {"container main: env is not a list; not injected"};
    expect_warnings(warn, want, 1);
    json_decref(patch);
    json_decref(warn);
}

Test(wh_env, unnamed_user_entry_tolerated)
{
    build(NULL, true);
    struct result r;
    run("unnamed-entry", true, &r);
    char *n = names(r.env);
    cr_expect_str_eq(n, "?,OTEL_SERVICE_NAME,A,GKE_DIAGON_IDENTIFIER,GKE_DIAGON_METADATA,"
                        "OTEL_RESOURCE_ATTRIBUTES_POD_NAME,OTEL_RESOURCE_ATTRIBUTES_POD_UID,"
                        "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME,OTEL_COLLECTOR_NAME,"
                        "OTEL_COLLECTOR_NAMESPACE,OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,"
                        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,"
                        "OTEL_EXPORTER_OTLP_METRICS_INSECURE,OTEL_EXPORTER_OTLP_TRACES_INSECURE,"
                        "OTEL_RESOURCE_ATTRIBUTES");
    free(n);
    release(&r);
}

Test(wh_env, init_container_path)
{
    build(NULL, true);
    json_t *patch = json_array(), *warn = json_array();
    int added = 0;
    cr_assert_eq(wh_env_patch(&set, container("env-user"), "/spec/initContainers/3", true, patch,
                              warn, &added),
                 0);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(patch, 0), "path")),
                     "/spec/initContainers/3/env");
    json_decref(patch);
    json_decref(warn);
}

Test(wh_env, envset_done_releases_and_is_safe)
{
    build("rl.algo=ppo", true);
    cr_assert_eq(set.n, WH_ENV_COUNT);
    wh_envset_done(&set);
    cr_expect_eq(set.n, 0);
    cr_expect_eq(set.attrs.n, 0);
    cr_expect_null(set.attrs.kv);
    cr_expect_null(set.v[0].value);
    cr_expect_str_eq(set.run_id, "");
    wh_envset_done(&set); /* twice (teardown does it again) */
    struct wh_envset z = {0};
    wh_envset_done(&z);
    wh_envset_done(NULL);
    cr_expect_eq(z.n, 0);
}

/* A Kubernetes env entry with neither value nor valueFrom is the empty
 * string, not a valueFrom: it is merged like any user value (the patch must
 * "add" the missing /value member; "replace" would not apply). */
Test(wh_env, user_attrs_without_value_is_empty_not_valuefrom,
     .disabled = false /* was BUG: warned as valueFrom, not merged */)
{
    build(NULL, true);
    struct result r;
    run("user-attrs-novalue", true, &r);
    cr_expect_eq(json_array_size(r.warn), 0);
    cr_expect_str_eq(value_of(r.env, "OTEL_RESOURCE_ATTRIBUTES"), OUR_ATTRS);
    check_env_invariants(r.env, "user-attrs-novalue");
    release(&r);
}

/* ---------- the run id and the table ---------- */

Test(wh_env, run_id_is_the_sdks)
{
    char id[K8S_MLRUN_ID_SIZE];
    cr_assert_eq(k8s_mlrun_id_json(IDENT, META, id), 0);
    cr_expect_str_eq(id, RUN_ID);
}

/* The settings' rows come from cfg's base when it was written for these
 * settings, else from one the set writes itself: the same set either way,
 * and a base left over from other settings is never used. */
Test(wh_env, base_gives_the_same_set)
{
    build("rl.algo=ppo", true);
    struct wh_envset own = set;
    memset(&set, 0, sizeof(set));
    cr_assert_not_null(own.own_base, "no finished config: the set writes its own base");
    cr_assert_eq(wh_config_finish(&cfg, NULL), 0);
    cr_assert_not_null(cfg.env_base);
    build("rl.algo=ppo", true);
    cr_expect_null(set.own_base, "cfg's base matches its settings");
    cr_assert_eq(set.n, own.n);
    cr_assert_eq(set.entries_len, own.entries_len);
    cr_expect_eq(memcmp(set.entries, own.entries, own.entries_len), 0);
    for (size_t i = 0; i < set.n; i++) {
        const struct wh_env_var *a = &set.v[i], *b = &own.v[i];
        cr_expect_eq(a->id, b->id);
        cr_expect_eq(a->needs, b->needs, "%s", a->name);
        cr_expect_eq(a->n_refs, b->n_refs, "%s", a->name);
        cr_expect_str_eq(a->value ? a->value : "-", b->value ? b->value : "-");
        cr_expect_eq(a->entry_len, b->entry_len);
        cr_expect_eq(memcmp(a->entry, b->entry, a->entry_len), 0, "%s", a->name);
    }
    cr_expect_eq(set.name_lens, own.name_lens);
    wh_envset_done(&own);
    wh_envset_done(&set);
    cfg.otel_collector_name = "other"; /* after finish: the base is stale */
    build(NULL, true);
    cr_expect_not_null(set.own_base);
    json_t *env = wh_envset_json(&set);
    cr_expect_str_eq(value_of(env, "OTEL_COLLECTOR_NAME"), "other");
    json_decref(env);
}

/* Which of ours each variable references, by id: what placement reads. */
Test(wh_env, needs_name_our_references)
{
    build(NULL, true);
    for (size_t i = 0; i < set.n; i++) {
        unsigned want = 0;
        for (int j = 0; j < WH_ENV_COUNT; j++)
            if (set.v[i].value && wh_env_references(set.v[i].value, wh_env_name(j)))
                want |= 1u << j;
        cr_expect_eq(set.v[i].needs, want, "%s", set.v[i].name);
    }
    cr_expect_neq(set.v[WH_ENV_METRICS_ENDPOINT].needs, 0u);
}

Test(wh_env, no_service_name_when_attributes_carry_it)
{
    struct wh_identity id = {.identifier = strdup(IDENT), .metadata = strdup(META)};
    struct wh_attrs a;
    wh_attrs_init(&a);
    cr_assert_eq(wh_attrs_parse_user(&a, "service.name=from-annotation"), 0);
    cr_assert_eq(wh_envset_build(&set, &cfg, &id, NULL, &a), 0);
    wh_identity_done(&id);
    cr_expect_eq(set.n, WH_ENV_COUNT - 1);
    json_t *env = wh_envset_json(&set);
    cr_expect_null(find_var(env, "OTEL_SERVICE_NAME"));
    cr_expect_str_eq(value_of(env, "OTEL_RESOURCE_ATTRIBUTES"), "service.name=from-annotation");
    json_decref(env);
}

/* ---------- the user's own OpenTelemetry settings take precedence ---------- */

#define METRICS_PAIR "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT and OTEL_EXPORTER_OTLP_METRICS_INSECURE"
#define TRACES_PAIR  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_INSECURE"

static void expect_absent(const json_t *env, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_null(find_var(env, names[i]), "%s injected", names[i]);
}

Test(wh_env, generic_endpoint_or_protocol_no_endpoint_or_insecure)
{
    build(NULL, true);
    const char *keys[] = {"user-generic-endpoint", "user-generic-protocol"};
    const char *vars[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"};
    for (size_t k = 0; k < 2; k++) {
        struct result r;
        run(keys[k], true, &r);
        const char *absent[] = {
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE"};
        expect_absent(r.env, absent, 4);
        cr_expect_not_null(find_var(r.env, "OTEL_COLLECTOR_NAME"));
        cr_expect_not_null(find_var(r.env, "OTEL_SERVICE_NAME"));
        cr_expect_eq(r.added, WH_ENV_COUNT - 4);
        char w0[300], w1[300];
        snprintf(w0, sizeof(w0),
                 "container main: " METRICS_PAIR " not injected: the container "
                 "sets %s",
                 vars[k]);
        snprintf(w1, sizeof(w1),
                 "container main: " TRACES_PAIR " not injected: the container "
                 "sets %s",
                 vars[k]);
        const char *want[] = {w0, w1};
        expect_warnings(r.warn, want, 2);
        check_env_invariants(r.env, keys[k]);
        check_idempotent(&r, true);
        release(&r);
    }
}

Test(wh_env, signal_endpoint_skips_that_signals_insecure)
{
    build(NULL, true);
    struct result r;
    run("user-metrics-endpoint", true, &r);
    cr_expect_str_eq(value_of(r.env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
                     "https://metrics.example:4317", "the user's, untouched");
    const char *absent[] = {"OTEL_EXPORTER_OTLP_METRICS_INSECURE"};
    expect_absent(r.env, absent, 1);
    cr_expect_str_eq(value_of(r.env, "OTEL_EXPORTER_OTLP_TRACES_INSECURE"), "true");
    cr_expect_not_null(find_var(r.env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
    const char *want[] = {"container main: OTEL_EXPORTER_OTLP_METRICS_INSECURE not injected: the "
                          "container sets OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"};
    expect_warnings(r.warn, want, 1);
    cr_expect_eq(r.added, WH_ENV_COUNT - 2);
    check_idempotent(&r, true);
    release(&r);
}

Test(wh_env, signal_protocol_skips_that_signals_endpoint_and_insecure)
{
    build(NULL, true);
    struct result r;
    run("user-traces-protocol", true, &r);
    const char *absent[] = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                            "OTEL_EXPORTER_OTLP_TRACES_INSECURE"};
    expect_absent(r.env, absent, 2);
    cr_expect_not_null(find_var(r.env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"));
    cr_expect_str_eq(value_of(r.env, "OTEL_EXPORTER_OTLP_METRICS_INSECURE"), "true");
    const char *want[] = {"container main: " TRACES_PAIR " not injected: the container sets "
                          "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"};
    expect_warnings(r.warn, want, 1);
    check_idempotent(&r, true);
    release(&r);
}

Test(wh_env, service_name_in_users_attributes_no_otel_service_name)
{
    build(NULL, true);
    struct result r;
    run("user-attrs-service-name", true, &r);
    const char *absent[] = {"OTEL_SERVICE_NAME"};
    expect_absent(r.env, absent, 1);
    const char *v = value_of(r.env, "OTEL_RESOURCE_ATTRIBUTES");
    cr_expect_eq(
        strncmp(v, "service.name=rl-training-service,service.namespace=opentelemetry-demo,", 70), 0,
        "the user's pairs first, as written: %s", v);
    const char *want[] = {"container main: OTEL_SERVICE_NAME not injected: the container sets "
                          "service.name in its OTEL_RESOURCE_ATTRIBUTES"};
    expect_warnings(r.warn, want, 1);
    check_env_invariants(r.env, "user-attrs-service-name");
    check_idempotent(&r, true);
    release(&r);
}

Test(wh_env, insecure_never_overwrites_the_users)
{
    build(NULL, true);
    struct result r;
    run("user-insecure-false", true, &r);
    cr_expect_str_eq(value_of(r.env, "OTEL_EXPORTER_OTLP_METRICS_INSECURE"), "false");
    cr_expect_str_eq(value_of(r.env, "OTEL_EXPORTER_OTLP_TRACES_INSECURE"), "true");
    cr_expect_not_null(find_var(r.env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"));
    cr_expect_eq(json_array_size(r.warn), 0);
    cr_expect_eq(r.added, WH_ENV_COUNT - 1);
    check_idempotent(&r, true);
    release(&r);
}

/* Our endpoints from an earlier review (or written exactly as we would)
 * are not the user's own settings: the insecure variables still come. */
Test(wh_env, our_own_endpoints_are_not_a_user_setting)
{
    build(NULL, true);
    struct result r;
    run("ours-from-earlier-review", true, &r);
    cr_expect_str_eq(value_of(r.env, "OTEL_EXPORTER_OTLP_METRICS_INSECURE"), "true");
    cr_expect_str_eq(value_of(r.env, "OTEL_EXPORTER_OTLP_TRACES_INSECURE"), "true");
    cr_expect_eq(json_array_size(r.warn), 0);
    check_env_invariants(r.env, "ours-from-earlier-review");
    check_idempotent(&r, true);
    release(&r);
}

/* Seed 000's hand-written block: the user keeps every value they wrote;
 * what they did not write is added (the insecure pair lets an app
 * configured from the environment alone reach the plaintext collector). */
Test(wh_env, seed_000_block)
{
    build("rl.algo=ppo", true);
    struct result r;
    run("seed-000", true, &r);
    cr_expect_str_eq(value_of(r.env, "OTEL_SERVICE_NAME"), "rl-training-service");
    cr_expect_str_eq(value_of(r.env, "OTEL_EXPORTER_OTLP_METRICS_INSECURE"), "true");
    cr_expect_str_eq(value_of(r.env, "OTEL_EXPORTER_OTLP_TRACES_INSECURE"), "true");
    const char *v = value_of(r.env, "OTEL_RESOURCE_ATTRIBUTES");
    cr_expect_eq(strncmp(v, "service.namespace=opentelemetry-demo,k8s.namespace.name=team-a,", 62),
                 0, "%s", v);
    const char *tail = ",rl.algo=ppo,rl.run.id=" RUN_ID;
    cr_expect_str_eq(v + strlen(v) - strlen(tail), tail);
    cr_expect_eq(json_array_size(r.warn), 0);
    check_env_invariants(r.env, "seed-000");
    check_idempotent(&r, true);
    release(&r);
}
