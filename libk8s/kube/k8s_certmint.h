/*
 * k8s_certmint — mint and inspect the webhook's certificates with OpenSSL:
 * a self-signed CA and a serving certificate it signs for a set of DNS
 * names, both ECDSA P-256 (what cert-manager issues by default for
 * webhooks), and the checks that decide whether a stored pair can stay:
 * issued by the CA, the same DNS names, far enough from expiry.
 *
 * libcrypto.so.3 is loaded on first use (dlopen), so a process that links
 * this module but never mints (the webhook's server) never maps it; when
 * it cannot be loaded, calls fail with -K8S_ETLS naming it.
 *
 * Thread-safety: reentrant (OpenSSL 3 needs no global locking setup; the
 * first load is guarded by pthread_once).
 *
 * Ownership: every PEM string returned is new (free()); outputs are
 * written only on success, nothing is leaked on failure.
 */
#ifndef K8S_CERTMINT_H
#define K8S_CERTMINT_H

#include <stddef.h>
#include <time.h>

#include "k8s_err.h"

#define K8S_CERTMINT_MAX_SANS 16

struct k8s_certmint_pair {
    char *cert_pem;
    char *key_pem; /* PKCS#8 */
};

/* A self-signed CA named cn (1-64 characters, X.509's limit), valid from now - 1 h for `days` days.
 * -K8S_EINVAL for bad arguments, -K8S_ETLS when OpenSSL fails. */
int k8s_certmint_ca(const char *cn, int days, time_t now, struct k8s_certmint_pair *ret,
                    struct k8s_error *reterr) K8S_MUST_CHECK;

/* A serving certificate (serverAuth; CN = sans[0], at most 64 characters;
 * DNS SANs sans[0..n))
 * signed by ca, valid from now - 1 h for `days` days (capped at the CA's
 * expiry). Errors as k8s_certmint_ca; -K8S_ETLS names an unusable CA. */
int k8s_certmint_serving(const struct k8s_certmint_pair *ca, const char *const *sans, int n,
                         int days, time_t now, struct k8s_certmint_pair *ret,
                         struct k8s_error *reterr) K8S_MUST_CHECK;

/* Whether cert_pem (the serving certificate) can be kept: it was signed by
 * ca_pem, its DNS SANs are exactly sans[0..n) (any order), key_pem matches
 * it, and both it and the CA stay valid for more than renew_before_s
 * seconds after now. Returns 0 when it can; -K8S_ETLS with reterr saying
 * why not (expiring, names changed, not issued by the CA, key mismatch,
 * unparsable). */
int k8s_certmint_check(const char *cert_pem, const char *key_pem, const char *ca_pem,
                       const char *const *sans, int n, time_t now, long renew_before_s,
                       struct k8s_error *reterr) K8S_MUST_CHECK;

/* Seconds from now until the first certificate in pem expires (negative
 * once expired); LONG_MIN when it does not parse. */
long k8s_certmint_seconds_left(const char *pem, time_t now);

/* Free both strings (NULL allowed) and zero the pair. */
void k8s_certmint_pair_done(struct k8s_certmint_pair *p);

#endif
