#include "k8s_config.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s_buf.h"
#include "k8s_codec.h"
#include "k8s_execcred.h"
#include "k8s_yaml.h"

#define MAX_FILE (4 << 20)

static const char *str_at(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

void k8s_config_done(struct k8s_config *c)
{
    if (!c)
        return;
    free(c->server);
    free(c->ca_pem);
    free(c->cert_pem);
    if (c->key_pem)
        explicit_bzero(c->key_pem, c->key_len);
    free(c->key_pem);
    if (c->token)
        explicit_bzero(c->token, strlen(c->token));
    free(c->token);
    free(c->token_file);
    free(c->tls_server_name);
    free(c->namespace);
    free(c->source);
    memset(c, 0, sizeof(*c));
}

static char *dup_n(const char *p, size_t n)
{
    char *s = p ? malloc(n + 1) : NULL;
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

int k8s_config_copy(const struct k8s_config *src, struct k8s_config *ret)
{
    struct k8s_config c = *src;
    c.server = src->server ? strdup(src->server) : NULL;
    c.ca_pem = dup_n(src->ca_pem, src->ca_len);
    c.cert_pem = dup_n(src->cert_pem, src->cert_len);
    c.key_pem = dup_n(src->key_pem, src->key_len);
    c.token = src->token ? strdup(src->token) : NULL;
    c.token_file = src->token_file ? strdup(src->token_file) : NULL;
    c.tls_server_name = src->tls_server_name ? strdup(src->tls_server_name) : NULL;
    c.namespace = src->namespace ? strdup(src->namespace) : NULL;
    c.source = src->source ? strdup(src->source) : NULL;
    if ((src->server && !c.server) || (src->ca_pem && !c.ca_pem) ||
        (src->cert_pem && !c.cert_pem) || (src->key_pem && !c.key_pem) ||
        (src->token && !c.token) || (src->token_file && !c.token_file) ||
        (src->tls_server_name && !c.tls_server_name) || (src->namespace && !c.namespace) ||
        (src->source && !c.source)) {
        k8s_config_done(&c);
        return -K8S_ENOMEM;
    }
    *ret = c;
    return 0;
}

/* ---------- kubeconfig ---------- */

/* The entry of list `section` whose "name" is name, then its `inner`. */
static const json_t *named(const json_t *doc, const char *section, const char *name,
                           const char *inner)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, section), i, e)
    {
        const char *n = str_at(e, "name");
        if (n && name && !strcmp(n, name))
            return json_object_get(e, inner);
    }
    return NULL;
}

/* Absolute path of p relative to the kubeconfig's directory. */
static char *resolve_path(const char *kubeconfig, const char *p)
{
    if (p[0] == '/')
        return strdup(p);
    char *copy = strdup(kubeconfig), *out = NULL;
    if (copy && asprintf(&out, "%s/%s", dirname(copy), p) < 0)
        out = NULL;
    free(copy);
    return out;
}

/* PEM from "<field>-data" (base64) or from the file "<field>". */
static int pem_field(const char *kubeconfig, const json_t *obj, const char *field, char **ret,
                     size_t *ret_len, struct k8s_error *reterr)
{
    char key[64];
    snprintf(key, sizeof(key), "%s-data", field);
    const char *data = str_at(obj, key), *file = str_at(obj, field);
    if (data) {
        *ret = (char *)k8s_base64_decode(data, strlen(data), ret_len);
        return *ret ? 0
                    : k8s_error_set(reterr, -K8S_EINVAL, "%s: %s is not valid base64", kubeconfig,
                                    key);
    }
    if (!file)
        return 0;
    char *path = resolve_path(kubeconfig, file);
    if (!path)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    int r = k8s_read_file(path, MAX_FILE, ret, ret_len, reterr);
    if (r < 0)
        k8s_error_prefix(reterr, "%s: %s", kubeconfig, field);
    free(path);
    return r;
}

static int take_cluster(const char *path, const json_t *cl, struct k8s_config *c,
                        struct k8s_error *reterr)
{
    const char *server = str_at(cl, "server");
    if (!server || !*server)
        return k8s_error_set(reterr, -K8S_EINVAL, "%s: the cluster has no server", path);
    size_t n = strlen(server);
    while (n > 0 && server[n - 1] == '/')
        n--;
    c->server = dup_n(server, n);
    c->insecure = json_is_true(json_object_get(cl, "insecure-skip-tls-verify"));
    if (str_at(cl, "tls-server-name"))
        c->tls_server_name = strdup(str_at(cl, "tls-server-name"));
    if (!c->server)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    return pem_field(path, cl, "certificate-authority", &c->ca_pem, &c->ca_len, reterr);
}

/* An exec credential plugin's token or client certificate. */
static int take_exec(const char *path, const json_t *exec, struct k8s_config *c,
                     struct k8s_error *reterr)
{
    struct k8s_execcred e;
    int r = k8s_execcred_run(path, exec, &e, reterr);
    if (r < 0)
        return r;
    c->token = e.token; /* the struct's strings become the config's */
    c->cert_pem = e.cert_pem, c->cert_len = e.cert_len;
    c->key_pem = e.key_pem, c->key_len = e.key_len;
    return 0;
}

static int take_user(const char *path, const json_t *user, struct k8s_config *c,
                     struct k8s_error *reterr)
{
    if (json_object_get(user, "auth-provider"))
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "%s: the user authenticates with auth-provider, which kubectl "
                             "dropped; use exec (e.g. gke-gcloud-auth-plugin), a token, "
                             "tokenFile or client certificate",
                             path);
    if (json_object_get(user, "exec"))
        return take_exec(path, json_object_get(user, "exec"), c, reterr);
    int r = pem_field(path, user, "client-certificate", &c->cert_pem, &c->cert_len, reterr);
    r = r ? r : pem_field(path, user, "client-key", &c->key_pem, &c->key_len, reterr);
    if (r == 0 && !c->cert_pem != !c->key_pem)
        r = k8s_error_set(reterr, -K8S_EINVAL, "%s: a client certificate needs its key", path);
    if (r == 0 && str_at(user, "tokenFile") &&
        !(c->token_file = resolve_path(path, str_at(user, "tokenFile"))))
        r = -K8S_ENOMEM;
    if (r == 0 && str_at(user, "token") && !(c->token = strdup(str_at(user, "token"))))
        r = -K8S_ENOMEM;
    return r;
}

static int from_doc(const char *path, const json_t *doc, const char *context, struct k8s_config *c,
                    struct k8s_error *reterr)
{
    const char *ctx_name = context && *context ? context : str_at(doc, "current-context");
    const json_t *ctx = named(doc, "contexts", ctx_name, "context");
    if (!ctx)
        return k8s_error_set(reterr, -K8S_EINVAL, "%s: context \"%s\" not found", path,
                             ctx_name ? ctx_name : "");
    const json_t *cl = named(doc, "clusters", str_at(ctx, "cluster"), "cluster");
    const json_t *user = named(doc, "users", str_at(ctx, "user"), "user");
    if (!cl)
        return k8s_error_set(reterr, -K8S_EINVAL, "%s: cluster \"%s\" not found", path,
                             str_at(ctx, "cluster") ? str_at(ctx, "cluster") : "");
    int r = take_cluster(path, cl, c, reterr);
    if (r == 0 && user)
        r = take_user(path, user, c, reterr);
    c->namespace = strdup(str_at(ctx, "namespace") ? str_at(ctx, "namespace") : "default");
    if (r == 0 && asprintf(&c->source, "kubeconfig %s (context %s)", path, ctx_name) < 0)
        c->source = NULL;
    if (r == 0 && (!c->namespace || !c->source))
        r = -K8S_ENOMEM;
    return r;
}

int k8s_config_from_kubeconfig(const char *path, const char *context, struct k8s_config *ret,
                               struct k8s_error *reterr)
{
    char *text = NULL;
    size_t len = 0;
    json_t *docs = NULL;
    struct k8s_config c = {0};
    int r = k8s_read_file(path, MAX_FILE, &text, &len, reterr);
    if (r == 0 && (r = k8s_yaml_load_all(text, len, &docs, reterr)) < 0)
        k8s_error_prefix(reterr, "%s", path);
    if (r == 0 && !json_is_object(json_array_get(docs, 0)))
        r = k8s_error_set(reterr, -K8S_EINVAL, "%s: not a kubeconfig", path);
    if (r == 0)
        r = from_doc(path, json_array_get(docs, 0), context, &c, reterr);
    json_decref(docs);
    free(text);
    if (r < 0) {
        k8s_config_done(&c);
        return r;
    }
    *ret = c;
    return 0;
}

/* ---------- in-cluster ---------- */

int k8s_config_in_cluster(const char *sa_dir, struct k8s_config *ret, struct k8s_error *reterr)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    struct k8s_config c = {0};
    char path[512];
    if (!host || !*host || !port || !*port)
        return k8s_error_set(reterr, -K8S_ENOTFOUND, "not running in a cluster");
    bool v6 = strchr(host, ':') != NULL;
    int r = asprintf(&c.server, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port) < 0
                ? -K8S_ENOMEM
                : 0;
    snprintf(path, sizeof(path), "%s/ca.crt", sa_dir);
    r = r ? r : k8s_read_file(path, MAX_FILE, &c.ca_pem, &c.ca_len, reterr);
    snprintf(path, sizeof(path), "%s/token", sa_dir);
    if (r == 0 && access(path, R_OK) != 0)
        r = k8s_error_set(reterr, -K8S_EIO, "%s: service account token not readable", path);
    if (r == 0 && !(c.token_file = strdup(path)))
        r = -K8S_ENOMEM;
    char *ns = NULL;
    size_t nslen;
    snprintf(path, sizeof(path), "%s/namespace", sa_dir);
    if (getenv("POD_NAMESPACE") && *getenv("POD_NAMESPACE"))
        ns = strdup(getenv("POD_NAMESPACE"));
    else if (r == 0 && k8s_read_file(path, 4096, &ns, &nslen, NULL) == 0)
        ns[strcspn(ns, " \n\r\t")] = '\0';
    c.namespace = ns ? ns : strdup("default");
    c.source = strdup("in-cluster service account");
    if (r == 0 && (!c.namespace || !c.source))
        r = -K8S_ENOMEM;
    if (r < 0) {
        k8s_config_done(&c);
        return r;
    }
    *ret = c;
    return 0;
}

/* ---------- precedence ---------- */

/* The first existing file of a ':'-separated $KUBECONFIG. */
static char *first_existing(const char *list)
{
    char *copy = strdup(list), *save = NULL, *out = NULL;
    for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p && !out;
         p = strtok_r(NULL, ":", &save))
        if (access(p, R_OK) == 0)
            out = strdup(p);
    free(copy);
    return out;
}

int k8s_config_load(const char *kubeconfig, struct k8s_config *ret, struct k8s_error *reterr)
{
    if (kubeconfig && *kubeconfig)
        return k8s_config_from_kubeconfig(kubeconfig, NULL, ret, reterr);
    const char *env = getenv("KUBECONFIG");
    char *path = env && *env ? first_existing(env) : NULL;
    if (path) {
        int r = k8s_config_from_kubeconfig(path, NULL, ret, reterr);
        free(path);
        return r;
    }
    if (getenv("KUBERNETES_SERVICE_HOST") && *getenv("KUBERNETES_SERVICE_HOST"))
        return k8s_config_in_cluster(K8S_SERVICEACCOUNT_DIR, ret, reterr);
    const char *home = getenv("HOME");
    char home_cfg[1024];
    snprintf(home_cfg, sizeof(home_cfg), "%s/.kube/config", home ? home : "");
    if (home && access(home_cfg, R_OK) == 0)
        return k8s_config_from_kubeconfig(home_cfg, NULL, ret, reterr);
    return k8s_error_set(reterr, -K8S_ENOTFOUND,
                         "no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not "
                         "running in a cluster");
}
