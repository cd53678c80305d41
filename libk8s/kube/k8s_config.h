/*
 * k8s_config — where the API server is and how to authenticate, from a
 * kubeconfig file or the in-cluster service account, with client-go's
 * precedence: --kubeconfig, then $KUBECONFIG (the first file of the list
 * that exists), then the in-cluster service account (when
 * KUBERNETES_SERVICE_HOST/PORT are set), then ~/.kube/config.
 *
 * From a kubeconfig: the current context (or the one named), its cluster's
 * server, certificate-authority(-data), insecure-skip-tls-verify,
 * tls-server-name, and its user's client-certificate(-data),
 * client-key(-data), token and tokenFile, or the token or certificate
 * its exec credential plugin gives (k8s_execcred, run once at load).
 * Relative paths are resolved against the kubeconfig's directory.
 * auth-provider users (dropped by kubectl) are refused with an error that
 * names them.
 *
 * Thread-safety: a config is read-only once loaded. Ownership: the struct
 * owns every string; k8s_config_done frees them (NULL-safe, zeroed struct).
 */
#ifndef K8S_CONFIG_H
#define K8S_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "k8s_err.h"

#define K8S_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct k8s_config {
    char *server; /* "https://host:port" or "http://..." without a trailing slash */
    char *ca_pem; /* CA bundle (PEM), NULL: the system's */
    size_t ca_len;
    char *cert_pem; /* client certificate (PEM), NULL: none */
    size_t cert_len;
    char *key_pem; /* client key (PEM) */
    size_t key_len;
    char *token;           /* static bearer token, NULL: none */
    char *token_file;      /* bearer token file, re-read while running */
    char *tls_server_name; /* SNI/verification name override, NULL: the host */
    bool insecure;         /* skip server certificate verification */
    char *namespace;       /* the context's (or service account's) namespace */
    char *source;          /* e.g. "kubeconfig /x (context y)", "in-cluster", for logs */
};

/* Load with the precedence above; kubeconfig is the --kubeconfig value
 * (NULL or "" when absent). -K8S_ENOTFOUND when nothing applies, other
 * negatives with reterr naming the file and the field; *ret untouched on
 * failure. */
int k8s_config_load(const char *kubeconfig, struct k8s_config *ret,
                    struct k8s_error *reterr) K8S_MUST_CHECK;

/* One kubeconfig file; context NULL = its current-context. */
int k8s_config_from_kubeconfig(const char *path, const char *context, struct k8s_config *ret,
                               struct k8s_error *reterr) K8S_MUST_CHECK;

/* The in-cluster service account under sa_dir (K8S_SERVICEACCOUNT_DIR in a
 * pod): server from KUBERNETES_SERVICE_HOST/PORT (IPv6 bracketed), CA
 * sa_dir/ca.crt, token file sa_dir/token, namespace from $POD_NAMESPACE or
 * sa_dir/namespace. */
int k8s_config_in_cluster(const char *sa_dir, struct k8s_config *ret,
                          struct k8s_error *reterr) K8S_MUST_CHECK;

void k8s_config_done(struct k8s_config *c);

/* Deep copy (for a client that outlives its source). -K8S_ENOMEM. */
int k8s_config_copy(const struct k8s_config *src, struct k8s_config *ret) K8S_MUST_CHECK;

#endif
