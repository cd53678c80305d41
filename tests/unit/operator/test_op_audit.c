/* op_audit: which pods the audit counts (DESIGN §4.4), from the caches in
 * tests/fixtures/unit/op_audit/cache.json: uninjected pods of workloads
 * opted in through every path of §3.3 (the namespace label included), and
 * injected pods whose identity lacks a field the SDK requires. Events need
 * an API server: tests/integration/test_operator.py posts them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_metrics.h"
#include "op_audit.h"
#include "op_pod.h"
#include "test_support.h"

static struct op_stores st;
static struct k8s_metrics *m;
static struct op_audit *audit;

static struct k8s_store *store_of(json_t *cache, const char *kind)
{
    struct k8s_store *s = k8s_store_new();
    if (!strcmp(kind, "pods"))
        k8s_store_set_transform(s, op_pod_pack); /* as the operator keeps them */
    k8s_store_replace_new(s, json_incref(json_object_get(cache, kind)));
    return s;
}

static void stores(void *ud, struct op_stores *out)
{
    (void)ud;
    *out = st;
}

static void setup_from(const char *fixture)
{
    json_t *cache = ts_load_json(fixture);
    st = (struct op_stores){.pods = store_of(cache, "pods"),
                            .namespaces = store_of(cache, "namespaces")};
    for (int k = 0; k < K8S_KIND_REF_COUNT; k++) /* the cached kinds, by their plural */
        st.kinds[k] = store_of(cache, k8s_kinds[k].plural);
    json_decref(cache);
    m = k8s_metrics_new();
    audit = op_audit_new(NULL, stores, NULL, m, "test");
    cr_assert_not_null(audit);
}

static void teardown(void)
{
    op_audit_free(audit);
    k8s_metrics_free(m);
    k8s_store_free(st.pods);
    for (int k = 0; k < K8S_KIND_REF_COUNT; k++)
        k8s_store_free(st.kinds[k]);
    k8s_store_free(st.namespaces);
}

static void setup(void)
{
    setup_from("unit/op_audit/cache.json");
}

TestSuite(op_audit, .init = setup, .fini = teardown);

static char *metrics(void)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    cr_assert_eq(k8s_metrics_render(m, &b), 0);
    return k8s_buf_take(&b, NULL);
}

#define UNINJECTED "mldiagnostics_operator_uninjected_pods"
#define INCOMPLETE "mldiagnostics_operator_incomplete_identity_pods"

Test(op_audit, namespace_label_opt_in_is_audited)
{
    op_audit_scan(audit, false);
    char *text = metrics();
    /* ns-js-0 and ns-js-1; not the injected one, the pod opted out, the
     * workload opted out, a namespace without the label, an exempt one */
    cr_expect_not_null(
        strstr(text, UNINJECTED "{namespace=\"opted\",kind=\"JobSet\",name=\"plain\"} 2\n"), "%s",
        text);
    cr_expect_null(strstr(text, "name=\"refused\""), "%s", text);
    cr_expect_null(strstr(text, UNINJECTED "{namespace=\"other\""), "%s", text);
    cr_expect_null(strstr(text, "namespace=\"exempt\""), "%s", text);
    cr_expect_eq(op_audit_total(audit), 2);
    free(text);
}

Test(op_audit, namespaces_not_listed_yet_no_namespace_opt_in)
{
    struct k8s_store *ns = st.namespaces;
    st.namespaces = NULL; /* RBAC withholds them, or not listed yet */
    op_audit_scan(audit, false);
    char *text = metrics();
    cr_expect_null(strstr(text, "namespace=\"opted\""), "%s", text);
    /* what the pod label says still counts (as before namespaces were
     * read); an exemption cannot be seen either */
    cr_expect_not_null(strstr(text, UNINJECTED "{namespace=\"exempt\""), "%s", text);
    cr_expect_eq(op_audit_total(audit), 1);
    free(text);
    st.namespaces = ns;
}

Test(op_audit, incomplete_identity_counted_on_the_named_workload)
{
    op_audit_scan(audit, false);
    char *text = metrics();
    /* sa-0 (no timestamp) and sa-1 (nor cluster); not ok-0, not sa-done */
    cr_expect_not_null(
        strstr(text, INCOMPLETE "{namespace=\"other\",kind=\"JobSet\",name=\"train\"} 2\n"), "%s",
        text);
    cr_expect_not_null(strstr(text, INCOMPLETE
                              "{namespace=\"other\",kind=\"Deployment\",name=\"rl-trainer\"} 1\n"),
                       "%s", text);
    /* an identity naming a kind the operator cannot post about: the pod;
     * a pod without identity annotations is not judged */
    cr_expect_not_null(
        strstr(text, INCOMPLETE "{namespace=\"other\",kind=\"Pod\",name=\"odd-0\"} 1\n"), "%s",
        text);
    cr_expect_null(strstr(text, "namespace=\"opted\",kind=\"JobSet\",name=\"plain\"} 1"), "%s",
                   text);
    cr_expect_null(strstr(text, "no-identity-0"), "%s", text);
    cr_expect_eq(op_audit_incomplete(audit), 4);
    free(text);
}

/* ---------- Kubeflow (tests/fixtures/unit/op_audit/kubeflow.json) ---------- */

static void setup_kubeflow(void)
{
    setup_from("unit/op_audit/kubeflow.json");
}

/* A TrainJob's pods name its JobSet; the JobSet's controller owner is the
 * workload, and its label the opt-in. A PyTorchJob owns its pods. */
TestSuite(op_audit_kubeflow, .init = setup_kubeflow, .fini = teardown);

Test(op_audit_kubeflow, workloads_audited_on_the_top_level_kind)
{
    op_audit_scan(audit, false);
    char *text = metrics();
    cr_expect_not_null(
        strstr(text, UNINJECTED "{namespace=\"kf\",kind=\"TrainJob\",name=\"tj-1\"} 2\n"), "%s",
        text);
    cr_expect_not_null(
        strstr(text, UNINJECTED "{namespace=\"kf\",kind=\"PyTorchJob\",name=\"pt-1\"} 2\n"), "%s",
        text);
    cr_expect_null(strstr(text, "name=\"tj-2\""), "%s", text); /* its JobSet's label is not its */
    cr_expect_null(strstr(text, "kind=\"JobSet\""), "%s", text);
    cr_expect_eq(op_audit_total(audit), 4);
    cr_expect_not_null(
        strstr(text, INCOMPLETE "{namespace=\"kf\",kind=\"TrainJob\",name=\"tj-3\"} 1\n"), "%s",
        text);
    free(text);
}
