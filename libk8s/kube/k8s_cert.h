/*
 * k8s_cert — X.509 checks with OpenSSL: a serving certificate chain and
 * its private key, as PEM, are parsed, matched and checked for validity
 * dates before anything serves with them.
 *
 * Thread-safety: reentrant (OpenSSL 3 needs no global locking setup).
 */
#ifndef K8S_CERT_H
#define K8S_CERT_H

#include <stddef.h>
#include <time.h>

#include "k8s_buf.h"
#include "k8s_err.h"

struct k8s_cert_info {
    time_t not_before;
    time_t not_after;
    int chain_len;     /* certificates in the chain file */
    char subject[256]; /* one-line subject of the leaf */
};

/* Check cert_pem (leaf first, optional intermediates) against key_pem.
 * cert_name/key_name name the sources in messages (e.g. file paths).
 * Returns 0 and fills *ret_info; -K8S_ETLS with reterr naming the file and
 * the problem (no certificate, unparsable key, key does not match,
 * expired, not yet valid); *ret_info untouched on failure. `now` is the
 * time to check validity against. */
int k8s_cert_check_pair(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                        const char *cert_name, const char *key_name, time_t now,
                        struct k8s_cert_info *ret_info, struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
