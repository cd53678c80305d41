#include "op_selftest.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "k8s_config.h"
#include "k8s_flags.h"
#include "k8s_time.h"

#define CRD_NAME "mldiagnosticsconnections.diagon.gke.io"

static void set(struct op_selftest_result *ret, enum op_selftest_cause cause, const char *fmt, ...)
    K8S_PRINTF(3, 4);

static void set(struct op_selftest_result *ret, enum op_selftest_cause cause, const char *fmt, ...)
{
    va_list ap;
    ret->cause = cause;
    va_start(ap, fmt);
    vsnprintf(ret->message, sizeof(ret->message), fmt, ap);
    va_end(ap);
}

/* "; Available=False (Reason: message)" for each condition not True. */
static void conditions(const json_t *status, char *out, size_t cap)
{
    size_t i, n = strlen(out);
    const json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        const char *reason = json_string_value(json_object_get(c, "reason"));
        const char *msg = json_string_value(json_object_get(c, "message"));
        if (!type || (strcmp(type, "Available") && strcmp(type, "Progressing")) ||
            (st && !strcmp(st, "True")) || n >= cap)
            continue;
        n += (size_t)snprintf(out + n, cap - n, "; %s=%s (%s: %s)", type, st ? st : "?",
                              reason ? reason : "", msg ? msg : "");
    }
}

int op_selftest_deployment_ready(const json_t *deployment, char *msg, size_t cap)
{
    const json_t *spec_replicas = json_object_get(json_object_get(deployment, "spec"), "replicas");
    const json_t *status = json_object_get(deployment, "status");
    json_int_t want = spec_replicas ? json_integer_value(spec_replicas) : 1;
    json_int_t ready = json_integer_value(json_object_get(status, "readyReplicas"));
    snprintf(msg, cap, "%lld of %lld replicas ready", (long long)ready, (long long)want);
    if (ready >= 1)
        return 1;
    if (want == 0 && cap > strlen(msg))
        snprintf(msg + strlen(msg), cap - strlen(msg), " (scaled to 0)");
    conditions(status, msg, cap);
    return 0;
}

/* 1 when the CRD decides (not served), 0 when served. */
static int crd_check(struct k8s_client *c, const struct op_selftest_opts *o,
                     struct op_selftest_result *ret, struct k8s_error *reterr)
{
    char path[400];
    snprintf(path, sizeof(path),
             "/apis/diagon.gke.io/v1alpha1/namespaces/%s/mldiagnosticsconnections?limit=1",
             o->namespace);
    json_t *list = NULL;
    int r = k8s_get_json(c, path, NULL, o->request_timeout_ms, &list, reterr);
    json_decref(list);
    if (r == -K8S_ENOTFOUND) {
        set(ret, OP_SELFTEST_NO_CRD,
            "the MLDiagnosticsConnection CRD is not served: listing diagon.gke.io/v1alpha1 "
            "mldiagnosticsconnections in %s answered 404; install the CRD " CRD_NAME
            " (crds.install=true, or manifests/crd/) and check `kubectl get crd " CRD_NAME "`",
            o->namespace);
        return 1;
    }
    if (r < 0)
        k8s_error_prefix(reterr, "cannot list mldiagnosticsconnections in %s", o->namespace);
    return r;
}

static int deployment_check(struct k8s_client *c, const struct op_selftest_opts *o,
                            struct op_selftest_result *ret, struct k8s_error *reterr)
{
    char path[400], state[768];
    snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/deployments/%s", o->namespace,
             o->deployment);
    json_t *dep = NULL;
    int r = k8s_get_json(c, path, NULL, o->request_timeout_ms, &dep, reterr);
    if (r == -K8S_ENOTFOUND)
        set(ret, OP_SELFTEST_NO_DEPLOYMENT, "the operator's Deployment %s/%s does not exist",
            o->namespace, o->deployment);
    else if (r < 0)
        k8s_error_prefix(reterr, "cannot read Deployment %s/%s", o->namespace, o->deployment);
    else if (op_selftest_deployment_ready(dep, state, sizeof(state)))
        set(ret, OP_SELFTEST_OK,
            "the MLDiagnosticsConnection CRD is served and Deployment %s/%s has %s", o->namespace,
            o->deployment, state);
    else
        set(ret, OP_SELFTEST_NOT_READY,
            "the operator is not ready: Deployment %s/%s has %s; see `kubectl -n %s describe "
            "deployment %s` and its pods' logs",
            o->namespace, o->deployment, state, o->namespace, o->deployment);
    json_decref(dep);
    return r == -K8S_ENOTFOUND ? 0 : r;
}

static void nap(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / K8S_NSEC_PER_SEC), (long)(ns % K8S_NSEC_PER_SEC)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int op_selftest_run(struct k8s_client *c, const struct op_selftest_opts *o,
                    struct op_selftest_result *ret, struct k8s_error *reterr)
{
    struct op_selftest_result res = {0};
    int64_t deadline = k8s_mono_ns() + o->timeout_ns;
    int r;
    for (;;) {
        res.attempts++;
        r = crd_check(c, o, &res, reterr);
        r = r == 0 ? deployment_check(c, o, &res, reterr) : r > 0 ? 0 : r;
        bool final = r == 0 ? res.cause == OP_SELFTEST_OK : !k8s_err_is_transient(r);
        int64_t left = deadline - k8s_mono_ns();
        if (final || left <= 0)
            break;
        nap(o->interval_ns < left ? o->interval_ns : left);
    }
    if (r == 0)
        *ret = res;
    return r;
}

/* The command line: the options and the API access. */
struct cli {
    struct op_selftest_opts o;
    const char *kubeconfig;
};

#define SEC        K8S_NSEC_PER_SEC
#define AT(member) K8S_FLAG_AT(struct cli, member)

static const struct k8s_flag flags[] = {
    {"namespace", K8S_FLAG_STRING, AT(o.namespace),
     "the release namespace (the default is $POD_NAMESPACE when set)"},
    {"deployment", K8S_FLAG_STRING, AT(o.deployment), "the operator's Deployment"},
    K8S_FLAG_ROWS_SELFTEST(struct cli, o.timeout_ns, o.interval_ns, kubeconfig),
    {NULL},
};

static void cli_init(struct cli *c)
{
    const char *pod_ns = getenv("POD_NAMESPACE");
    *c = (struct cli){.o = {.namespace = pod_ns && *pod_ns ? pod_ns : "gke-mldiagnostics",
                            .deployment = "mldiagnostics-connection-operator",
                            .timeout_ns = 60 * SEC,
                            .interval_ns = 2 * SEC,
                            .request_timeout_ms = 10000},
                      .kubeconfig = ""};
}

static int parse(struct cli *c, int argc, char **argv, int argi, struct k8s_error *reterr)
{
    struct cli dflt;
    cli_init(&dflt);
    *c = dflt;
    int r = k8s_flags_command(flags, c, &dflt,
                              "Usage: mldiagnostics-operator selftest [flags]\n\n"
                              "The chart's helm test: the MLDiagnosticsConnection CRD is served "
                              "and the\noperator's Deployment has ready replicas.\n\n",
                              argc, argv, argi, reterr);
    if (r == 0 && (!*c->o.namespace || !*c->o.deployment))
        r = k8s_error_set(reterr, -K8S_EINVAL, "--namespace and --deployment must not be empty");
    return r;
}

int op_selftest_main(int argc, char **argv, int argi)
{
    struct cli cli;
    struct k8s_error err = {0};
    int r = parse(&cli, argc, argv, argi, &err);
    if (r != 0) {
        if (r < 0)
            fprintf(stderr, "mldiagnostics-operator selftest: %s (see --help)\n", err.message);
        return r > 0 ? 0 : 2;
    }
    struct k8s_client *c = NULL;
    struct op_selftest_result res = {0};
    r = k8s_client_open(cli.kubeconfig, &c, &err);
    if (r == 0)
        r = op_selftest_run(c, &cli.o, &res, &err);
    k8s_client_free(c);
    if (r < 0) {
        fprintf(stderr, "selftest failed: %s\n", err.message);
        return 1;
    }
    bool ok = res.cause == OP_SELFTEST_OK;
    fprintf(ok ? stdout : stderr, "selftest %s: %s (attempts: %d)\n", ok ? "passed" : "failed",
            res.message, res.attempts);
    return ok ? 0 : 1;
}
