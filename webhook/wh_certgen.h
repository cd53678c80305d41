/*
 * wh_certgen — `mldiagnostics-webhook certgen`: the install path without
 * cert-manager (DESIGN §3.6). Mints a CA and a serving certificate for
 * the webhook Service's four DNS names, stores them in a kubernetes.io/tls
 * Secret (tls.crt, tls.key, ca.crt) and sets caBundle on the webhook
 * configuration's entries that call that Service, with a JSON patch of
 * that field only (guarded by a test of the entry's name).
 *
 * Idempotent: a stored pair is kept while it was issued by the stored CA,
 * names exactly the Service's DNS names, matches its key and stays valid
 * for more than --renew-before; otherwise a new CA and certificate are
 * minted and the caBundle carries the new CA followed by the previous one
 * (still valid), so that the API server trusts both the old certificate
 * the webhook serves until the kubelet refreshes its Secret volume and the
 * new one. Writes carry the read resourceVersion; a conflict starts over.
 *
 * Thread-safety: single-threaded command.
 */
#ifndef WH_CERTGEN_H
#define WH_CERTGEN_H

#include <stdint.h>
#include <time.h>

#include "k8s_client.h"
#include "k8s_err.h"

struct wh_certgen_opts {
    const char *service;
    const char *namespace;
    const char *secret_name;    /* "" → <service>-tls */
    const char *webhook_config; /* "" → no caBundle to set */
    const char *cluster_domain;
    int64_t renew_before_ns;
    int64_t validity_ns;
};

enum wh_certgen_secret { WH_SECRET_KEPT, WH_SECRET_CREATED, WH_SECRET_RENEWED };
enum wh_certgen_bundle { WH_BUNDLE_NONE, WH_BUNDLE_ABSENT, WH_BUNDLE_UNCHANGED, WH_BUNDLE_PATCHED };

struct wh_certgen_result {
    enum wh_certgen_secret secret;
    char renew_reason[256]; /* why a stored pair was replaced */
    enum wh_certgen_bundle bundle;
    int webhooks_patched;
    time_t not_after; /* of the serving certificate in the Secret */
};

/* One run against the API server behind c at time now. 0 and *ret
 * filled; otherwise the API or certificate error, with reterr naming the
 * object and the problem (e.g. "secret gke-mldiagnostics/x: ..."). */
int wh_certgen_run(struct k8s_client *c, const struct wh_certgen_opts *o, time_t now,
                   struct wh_certgen_result *ret, struct k8s_error *reterr) K8S_MUST_CHECK;

/* The command: flags after argv[argi], logs JSON lines, exit code 0, 1
 * (failure) or 2 (bad flags). */
int wh_certgen_main(int argc, char **argv, int argi);

#endif
