#include "k8s_cert.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"

static void ssl_reason(char *out, size_t cap)
{
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, out, cap);
    else
        snprintf(out, cap, "no PEM data");
    ERR_clear_error();
}

static time_t asn1_time(const ASN1_TIME *t)
{
    struct tm tm;
    if (ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return timegm(&tm);
}

static int load_chain(const char *pem, size_t len, const char *name, X509 **ret_leaf, int *ret_n,
                      struct k8s_error *reterr)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    X509 *leaf = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    char why[200];
    if (!leaf) {
        ssl_reason(why, sizeof(why));
        BIO_free(bio);
        return k8s_error_set(reterr, -K8S_ETLS, "%s: no PEM certificate found (%s)", name, why);
    }
    int n = 1;
    X509 *more;
    while ((more = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
        X509_free(more);
        n++;
    }
    ERR_clear_error(); /* the loop ends on "no start line" */
    BIO_free(bio);
    *ret_leaf = leaf;
    *ret_n = n;
    return 0;
}

static int load_key(const char *pem, size_t len, const char *name, EVP_PKEY **ret,
                    struct k8s_error *reterr)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (!key) {
        char why[200];
        ssl_reason(why, sizeof(why));
        return k8s_error_set(reterr, -K8S_ETLS, "%s: cannot parse the private key (%s)", name, why);
    }
    *ret = key;
    return 0;
}

static int check_dates(X509 *leaf, const char *name, time_t now, struct k8s_cert_info *info,
                       struct k8s_error *reterr)
{
    char when[32];
    info->not_before = asn1_time(X509_get0_notBefore(leaf));
    info->not_after = asn1_time(X509_get0_notAfter(leaf));
    if (info->not_after <= now) {
        k8s_time_rfc3339(info->not_after, when);
        return k8s_error_set(reterr, -K8S_ETLS, "%s: certificate expired at %s", name, when);
    }
    if (info->not_before > now) {
        k8s_time_rfc3339(info->not_before, when);
        return k8s_error_set(reterr, -K8S_ETLS, "%s: certificate is not valid before %s", name,
                             when);
    }
    return 0;
}

int k8s_cert_check_pair(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                        const char *cert_name, const char *key_name, time_t now,
                        struct k8s_cert_info *ret_info, struct k8s_error *reterr)
{
    X509 *leaf = NULL;
    EVP_PKEY *key = NULL;
    struct k8s_cert_info info = {0};
    int r = load_chain(cert_pem, cert_len, cert_name, &leaf, &info.chain_len, reterr);
    if (r < 0)
        return r;
    r = load_key(key_pem, key_len, key_name, &key, reterr);
    if (r < 0)
        goto out_free_leaf;
    if (X509_check_private_key(leaf, key) != 1) {
        ERR_clear_error();
        r = k8s_error_set(reterr, -K8S_ETLS, "%s does not match the certificate in %s", key_name,
                          cert_name);
        goto out_free_key;
    }
    r = check_dates(leaf, cert_name, now, &info, reterr);
    if (r < 0)
        goto out_free_key;
    X509_NAME_oneline(X509_get_subject_name(leaf), info.subject, sizeof(info.subject));
    *ret_info = info;
out_free_key:
    EVP_PKEY_free(key);
out_free_leaf:
    X509_free(leaf);
    return r;
}
