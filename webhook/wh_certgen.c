#include "wh_certgen.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_certmint.h"
#include "k8s_codec.h"
#include "k8s_config.h"
#include "k8s_flags.h"
#include "k8s_jget.h"
#include "k8s_log.h"
#include "k8s_time.h"

#define ATTEMPTS   5
#define TIMEOUT_MS 10000
#define DAY_S      86400L
#define MWC_PATH   "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"

/* The stored pair and CA, decoded from a Secret's data. */
struct stored {
    char *cert, *key, *ca;
};

static void stored_done(struct stored *s)
{
    free(s->cert);
    free(s->key);
    free(s->ca);
}

static char *data_pem(json_t *secret, const char *key)
{
    const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), key));
    size_t n = 0;
    return b64 ? (char *)k8s_base64_decode(b64, strlen(b64), &n) : NULL;
}

static void dns_names(const struct wh_certgen_opts *o, char store[4][320], const char *sans[4])
{
    snprintf(store[0], 320, "%s", o->service);
    snprintf(store[1], 320, "%s.%s", o->service, o->namespace);
    snprintf(store[2], 320, "%s.%s.svc", o->service, o->namespace);
    snprintf(store[3], 320, "%s.%s.svc.%s", o->service, o->namespace, o->cluster_domain);
    for (int i = 0; i < 4; i++)
        sans[i] = store[i];
}

static int mint(const struct wh_certgen_opts *o, time_t now, struct k8s_certmint_pair *ca,
                struct k8s_certmint_pair *leaf, struct k8s_error *reterr)
{
    char store[4][320], cn[400];
    const char *sans[4];
    dns_names(o, store, sans);
    int days = (int)(o->validity_ns / K8S_NSEC_PER_SEC / DAY_S);
    snprintf(cn, sizeof(cn), "%.61s CA", o->service); /* X.509 caps a CN at 64 */
    int r = k8s_certmint_ca(cn, days + 30, now, ca, reterr);
    if (r == 0 && (r = k8s_certmint_serving(ca, sans, 4, days, now, leaf, reterr)) < 0)
        k8s_certmint_pair_done(ca);
    return r;
}

static json_t *b64_string(const char *pem)
{
    size_t n = 0;
    char *b = k8s_base64_encode(pem, strlen(pem), &n);
    json_t *j = b ? json_stringn(b, n) : NULL;
    free(b);
    return j;
}

/* The Secret to write: a new one, or cur (borrowed) with new data and our
 * labels, keeping its other labels, annotations, owner references and
 * resourceVersion (the write's precondition). */
static json_t *secret_body(const struct wh_certgen_opts *o, const char *secret, json_t *cur,
                           const struct k8s_certmint_pair *ca, const struct k8s_certmint_pair *leaf)
{
    json_t *body = cur ? json_deep_copy(cur)
                       : json_pack("{s:s, s:s, s:{s:s, s:s}, s:s}", "apiVersion", "v1", "kind",
                                   "Secret", "metadata", "name", secret, "namespace", o->namespace,
                                   "type", "kubernetes.io/tls");
    json_t *meta = json_object_get(body, "metadata");
    json_t *labels = json_object_get(meta, "labels");
    if (meta && !json_is_object(labels)) {
        labels = json_object();
        json_object_set_new(meta, "labels", labels);
    }
    json_t *data = json_pack("{s:o, s:o, s:o}", "tls.crt", b64_string(leaf->cert_pem), "tls.key",
                             b64_string(leaf->key_pem), "ca.crt", b64_string(ca->cert_pem));
    json_object_del(body, "stringData");
    if (!body || !json_is_object(labels) || !data) {
        json_decref(data);
        json_decref(body);
        return NULL;
    }
    /* set_new steals its value even when it fails */
    int bad = json_object_set_new(body, "data", data) < 0;
    bad |= json_object_set_new(labels, "app.kubernetes.io/managed-by",
                               json_string("mldiagnostics-certgen")) < 0;
    bad |=
        json_object_set_new(labels, "app.kubernetes.io/part-of", json_string("mldiagnostics")) < 0;
    if (bad) {
        json_decref(body);
        return NULL;
    }
    return body;
}

/* Keep the stored pair (0), or say why not (-K8S_ETLS with the reason). */
static int keepable(const struct wh_certgen_opts *o, const struct stored *s, time_t now,
                    struct k8s_error *why)
{
    char store[4][320];
    const char *sans[4];
    dns_names(o, store, sans);
    if (!s->cert || !s->key || !s->ca)
        return k8s_error_set(why, -K8S_ETLS, "the Secret lacks tls.crt, tls.key or ca.crt");
    return k8s_certmint_check(s->cert, s->key, s->ca, sans, 4, now,
                              (long)(o->renew_before_ns / K8S_NSEC_PER_SEC), why);
}

/* Mint a new pair and write it: POST when there is no Secret (cur NULL),
 * else PUT over cur with its resourceVersion. old_ca (may be NULL) is the
 * replaced CA, kept in *bundle after the new one while still valid. */
static int write_new_pair(struct k8s_client *c, const struct wh_certgen_opts *o, const char *secret,
                          json_t *cur, const char *old_ca, time_t now,
                          struct wh_certgen_result *res, char **bundle, struct k8s_error *reterr)
{
    struct k8s_certmint_pair ca = {0}, leaf = {0};
    int r = mint(o, now, &ca, &leaf, reterr);
    if (r < 0)
        return r;
    json_t *body = secret_body(o, secret, cur, &ca, &leaf);
    char path[600];
    int n = snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets", o->namespace);
    if (cur)
        snprintf(path + n, sizeof(path) - (size_t)n, "/%s", secret);
    r = body ? k8s_send_json(c, cur ? "PUT" : "POST", path, NULL, body, TIMEOUT_MS, NULL, reterr)
             : k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    json_decref(body);
    if (r == 0) {
        res->secret = cur ? WH_SECRET_RENEWED : WH_SECRET_CREATED;
        res->not_after = now + k8s_certmint_seconds_left(leaf.cert_pem, now);
        /* the old CA stays trusted until the webhook serves the new pair */
        bool old_ok = old_ca && k8s_certmint_seconds_left(old_ca, now) > 0;
        if (asprintf(bundle, "%s%s", ca.cert_pem, old_ok ? old_ca : "") < 0) {
            *bundle = NULL;
            r = k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
        }
    }
    k8s_certmint_pair_done(&ca);
    k8s_certmint_pair_done(&leaf);
    return r;
}

/* One read-decide-write pass over the Secret. -K8S_ECONFLICT: start over.
 * On success *bundle is the caBundle PEM the configuration should carry. */
static int secret_pass(struct k8s_client *c, const struct wh_certgen_opts *o, const char *secret,
                       time_t now, struct wh_certgen_result *res, char **bundle,
                       struct k8s_error *reterr)
{
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", o->namespace, secret);
    json_t *cur = NULL;
    int r = k8s_get_json(c, path, NULL, TIMEOUT_MS, &cur, reterr);
    if (r < 0 && r != -K8S_ENOTFOUND)
        return r;
    const char *type = json_string_value(json_object_get(cur, "type"));
    if (cur && (!type || strcmp(type, "kubernetes.io/tls"))) { /* the type is immutable */
        r = k8s_error_set(reterr, -K8S_EINVAL,
                          "it exists with type %s, not kubernetes.io/tls: delete it or choose "
                          "another --secret-name",
                          type ? type : "(none)");
        json_decref(cur); /* type pointed into it */
        return r;
    }
    struct stored s = {0};
    struct k8s_error why = {0};
    if (cur)
        s = (struct stored){data_pem(cur, "tls.crt"), data_pem(cur, "tls.key"),
                            data_pem(cur, "ca.crt")};
    if (cur && keepable(o, &s, now, &why) == 0) {
        res->secret = WH_SECRET_KEPT;
        res->not_after = now + k8s_certmint_seconds_left(s.cert, now);
        *bundle = s.ca;
        s.ca = NULL;
        r = 0;
    } else {
        r = write_new_pair(c, o, secret, cur, s.ca, now, res, bundle, reterr);
        if (r == 0 && cur)
            snprintf(res->renew_reason, sizeof(res->renew_reason), "%s", why.message);
    }
    stored_done(&s);
    json_decref(cur);
    return r;
}

/* The entry calls our Service. */
static bool calls_service(json_t *hook, const struct wh_certgen_opts *o)
{
    json_t *svc = json_object_get(json_object_get(hook, "clientConfig"), "service");
    const char *name = json_string_value(json_object_get(svc, "name"));
    const char *ns = json_string_value(json_object_get(svc, "namespace"));
    return name && ns && !strcmp(name, o->service) && !strcmp(ns, o->namespace);
}

/* The entry's current caBundle already trusts ca_pem. */
static bool trusts(json_t *hook, const char *ca_pem)
{
    const char *b64 = k8s_jstr2(hook, "clientConfig", "caBundle");
    size_t n = 0;
    char *pem = b64 ? (char *)k8s_base64_decode(b64, strlen(b64), &n) : NULL;
    bool yes = pem && strstr(pem, ca_pem);
    free(pem);
    return yes;
}

#define PEM_BEGIN "-----BEGIN CERTIFICATE-----"
#define PEM_END   "-----END CERTIFICATE-----"

/* bundle, then the certificates of the entry's current caBundle that are
 * still valid and not in bundle: what the API server trusts only grows
 * until old certificates expire, even when an earlier run renewed the
 * Secret but failed before patching. New base64 string; NULL on OOM. */
static json_t *merged_bundle(json_t *hook, const char *bundle, time_t now)
{
    const char *b64 = k8s_jstr2(hook, "clientConfig", "caBundle");
    size_t n = 0;
    char *cur = b64 ? (char *)k8s_base64_decode(b64, strlen(b64), &n) : NULL;
    struct k8s_buf out;
    k8s_buf_init(&out, 1 << 20);
    int r = k8s_buf_appends(&out, bundle);
    for (char *p = cur ? strstr(cur, PEM_BEGIN) : NULL, *e; r == 0 && p && (e = strstr(p, PEM_END));
         p = strstr(e, PEM_BEGIN)) {
        e += sizeof(PEM_END) - 1;
        char save = *e;
        *e = '\0';
        if (!strstr(bundle, p) && k8s_certmint_seconds_left(p, now) > 0)
            r = k8s_buf_cat(&out, p, "\n", NULL);
        *e = save;
    }
    json_t *value = r == 0 ? b64_string(out.data) : NULL;
    k8s_buf_done(&out);
    free(cur);
    return value;
}

/* JSON patch: for each entry calling our Service whose caBundle lacks the
 * CA, test its name (the index still means it) and set the field. */
static json_t *bundle_patch(json_t *cfg, const struct wh_certgen_opts *o, const char *ca_pem,
                            const char *bundle, time_t now, int *ret_calls)
{
    json_t *ops = json_array(), *hook;
    size_t i;
    *ret_calls = 0;
    json_array_foreach(json_object_get(cfg, "webhooks"), i, hook)
    {
        if (!calls_service(hook, o))
            continue;
        ++*ret_calls;
        if (trusts(hook, ca_pem))
            continue;
        char at[64];
        snprintf(at, sizeof(at), "/webhooks/%zu", i);
        json_array_append_new(ops, json_pack("{s:s, s:s+, s:O}", "op", "test", "path", at, "/name",
                                             "value", json_object_get(hook, "name")));
        json_t *value = merged_bundle(hook, bundle, now);
        if (!value) {
            json_decref(ops);
            return NULL;
        }
        json_array_append_new(ops, json_pack("{s:s, s:s+, s:o}", "op", "add", "path", at,
                                             "/clientConfig/caBundle", "value", value));
    }
    return ops;
}

static int bundle_pass(struct k8s_client *c, const struct wh_certgen_opts *o, const char *bundle,
                       time_t now, struct wh_certgen_result *res, struct k8s_error *reterr)
{
    char path[400];
    snprintf(path, sizeof(path), MWC_PATH "%s", o->webhook_config);
    json_t *cfg = NULL;
    int r = k8s_get_json(c, path, NULL, TIMEOUT_MS, &cfg, reterr);
    if (r == -K8S_ENOTFOUND) {
        res->bundle = WH_BUNDLE_ABSENT;
        return 0;
    }
    if (r < 0)
        return r;
    /* the first certificate of the bundle is the Secret's CA */
    const char *end = strstr(bundle, "-----END CERTIFICATE-----");
    char *ca = end ? strndup(bundle, (size_t)(end - bundle) + 25) : NULL;
    int calls = 0;
    json_t *ops = ca ? bundle_patch(cfg, o, ca, bundle, now, &calls) : NULL;
    if (!ops)
        r = k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    else if (!calls)
        r = k8s_error_set(reterr, -K8S_EINVAL, "no webhook in it calls service %s/%s", o->namespace,
                          o->service);
    else if (!json_array_size(ops))
        res->bundle = WH_BUNDLE_UNCHANGED;
    else if ((r = k8s_send_json(c, "PATCH", path, K8S_PATCH_JSON, ops, TIMEOUT_MS, NULL, reterr)) ==
             0) {
        res->bundle = WH_BUNDLE_PATCHED;
        res->webhooks_patched = (int)json_array_size(ops) / 2;
    }
    json_decref(ops);
    free(ca);
    json_decref(cfg);
    return r;
}

int wh_certgen_run(struct k8s_client *c, const struct wh_certgen_opts *o, time_t now,
                   struct wh_certgen_result *ret, struct k8s_error *reterr)
{
    char secret[300];
    snprintf(secret, sizeof(secret), "%s", o->secret_name);
    if (!*secret)
        snprintf(secret, sizeof(secret), "%s-tls", o->service);
    struct wh_certgen_result res = {0};
    char *bundle = NULL;
    int r = -K8S_ECONFLICT;
    for (int i = 0; i < ATTEMPTS && r == -K8S_ECONFLICT; i++)
        r = secret_pass(c, o, secret, now, &res, &bundle, reterr);
    if (r < 0) {
        k8s_error_prefix(reterr, "secret %s/%s", o->namespace, secret);
        return r;
    }
    if (!*o->webhook_config)
        res.bundle = WH_BUNDLE_NONE;
    else
        for (int i = 0; i < ATTEMPTS && (i == 0 || r == -K8S_EINVALID || r == -K8S_ECONFLICT); i++)
            r = bundle_pass(c, o, bundle, now, &res, reterr);
    if (r < 0)
        k8s_error_prefix(reterr, "mutatingwebhookconfiguration %s", o->webhook_config);
    free(bundle);
    if (r == 0)
        *ret = res;
    return r;
}

/* The command line: the options and the API access. */
struct cli {
    struct wh_certgen_opts o;
    const char *kubeconfig;
};

#define DAY        (DAY_S * K8S_NSEC_PER_SEC)
#define AT(member) K8S_FLAG_AT(struct cli, member)

static const struct k8s_flag flags[] = {
    {"service", K8S_FLAG_STRING, AT(o.service), "the webhook's Service (required)"},
    {"namespace", K8S_FLAG_STRING, AT(o.namespace), "the Service's namespace (required)"},
    {"secret-name", K8S_FLAG_STRING, AT(o.secret_name),
     "the kubernetes.io/tls Secret to write (empty: <service>-tls)"},
    {"webhook-config", K8S_FLAG_STRING, AT(o.webhook_config),
     "MutatingWebhookConfiguration whose entries calling the Service get the caBundle"},
    {"cluster-domain", K8S_FLAG_STRING, AT(o.cluster_domain),
     "DNS domain of the cluster (the default is $KUBERNETES_CLUSTER_DOMAIN when set)"},
    {"renew-before", K8S_FLAG_DURATION, AT(o.renew_before_ns),
     "renew when the certificate expires within this", 0, 3650 * DAY},
    {"validity", K8S_FLAG_DURATION, AT(o.validity_ns), "lifetime of a new serving certificate", DAY,
     3650 * DAY},
    {"kubeconfig", K8S_FLAG_STRING, AT(kubeconfig),
     "kubeconfig for out-of-cluster use (empty: the in-cluster service account)"},
    {NULL},
};

static void cli_init(struct cli *c)
{
    const char *dom = getenv("KUBERNETES_CLUSTER_DOMAIN");
    *c = (struct cli){
        .o =
            {
                .service = "",
                .namespace = "",
                .secret_name = "",
                .webhook_config = "",
                .cluster_domain = dom && *dom ? dom : "cluster.local",
                .renew_before_ns = 30 * DAY,
                .validity_ns = 365 * DAY,
            },
        .kubeconfig = "",
    };
}

static int parse(struct cli *c, int argc, char **argv, int argi, struct k8s_error *reterr)
{
    struct cli dflt;
    cli_init(&dflt);
    *c = dflt;
    int r = k8s_flags_command(
        flags, c, &dflt,
        "Usage: mldiagnostics-webhook certgen --service S --namespace N [flags]\n\n"
        "Creates or renews the webhook's CA and serving certificate in a Secret and\n"
        "sets caBundle on the webhook configuration (no cert-manager needed).\n\n",
        argc, argv, argi, reterr);
    if (r == 0 && (!*c->o.service || !*c->o.namespace))
        r = k8s_error_set(reterr, -K8S_EINVAL, "--service and --namespace are required");
    if (r == 0 && c->o.renew_before_ns >= c->o.validity_ns)
        r = k8s_error_set(reterr, -K8S_EINVAL, "--renew-before must be shorter than --validity");
    return r;
}

static const char *const secret_word[] = {"kept", "created", "renewed"};
static const char *const bundle_word[] = {"not requested", "configuration not found (yet)",
                                          "unchanged", "patched"};

int wh_certgen_main(int argc, char **argv, int argi)
{
    struct cli cli;
    struct k8s_error err = {0};
    int r = parse(&cli, argc, argv, argi, &err);
    if (r != 0) {
        if (r < 0)
            fprintf(stderr, "mldiagnostics-webhook certgen: %s (see --help)\n", err.message);
        return r > 0 ? 0 : 2;
    }
    struct k8s_client *client = NULL;
    struct wh_certgen_result res;
    r = k8s_client_open(cli.kubeconfig, &client, &err);
    if (r == 0)
        r = wh_certgen_run(client, &cli.o, time(NULL), &res, &err);
    k8s_client_free(client);
    if (r < 0) {
        k8s_log_json(K8S_LOG_ERROR, "certgen failed", json_pack("{s:s}", "error", err.message));
        return 1;
    }
    char until[32];
    k8s_time_rfc3339(res.not_after, until);
    k8s_log_json(K8S_LOG_INFO, "certgen done",
                 json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "secret", secret_word[res.secret],
                           "reason", res.renew_reason, "notAfter", until, "caBundle",
                           bundle_word[res.bundle], "webhookConfiguration", cli.o.webhook_config,
                           "webhooksPatched", res.webhooks_patched));
    return 0;
}
