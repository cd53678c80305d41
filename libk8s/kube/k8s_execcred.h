/*
 * k8s_execcred — a kubeconfig user's exec credential plugin, run as
 * client-go runs it (client.authentication.k8s.io ExecCredential): the
 * command with its args, the user's env on top of ours, and
 * KUBERNETES_EXEC_INFO saying the call is not interactive; its standard
 * output is an ExecCredential whose status holds a bearer token or a
 * client certificate and key. A relative command with a '/' is resolved
 * against the kubeconfig's directory; a bare name is looked up on PATH.
 * GKE's kubeconfigs authenticate this way (gke-gcloud-auth-plugin).
 *
 * Run once per load: a short-lived credential is not refreshed (the
 * one-shot commands and the kubectl plugin live shorter than it).
 *
 * Thread-safety: reentrant (posix_spawn). Ownership: *ret owns its strings
 * (k8s_execcred_done, NULL-safe, zeroed struct); nothing on failure.
 */
#ifndef K8S_EXECCRED_H
#define K8S_EXECCRED_H

#include <jansson.h>
#include <stddef.h>

#include "k8s_err.h"

struct k8s_execcred {
    char *token;              /* NULL: a client certificate instead */
    char *cert_pem, *key_pem; /* both or neither */
    size_t cert_len, key_len;
};

/* Run the exec stanza of a kubeconfig user (borrowed) read from the file
 * kubeconfig. -K8S_EINVAL (no command or apiVersion; output that is not an
 * ExecCredential with a token or certificate), -K8S_EIO (the command could
 * not run, or exited non-zero: the message names it, its status and its
 * installHint), -K8S_ENOMEM; reterr says which. */
int k8s_execcred_run(const char *kubeconfig, const json_t *exec, struct k8s_execcred *ret,
                     struct k8s_error *reterr) K8S_MUST_CHECK;

void k8s_execcred_done(struct k8s_execcred *c);

#endif
