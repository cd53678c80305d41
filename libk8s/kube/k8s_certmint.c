#include "k8s_certmint.h"

#include <dlfcn.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libcrypto is loaded on first use (dlopen), like libcurl (k8s_curl): the
 * webhook's server never maps it, so linking certgen into the same binary
 * costs the serving process no memory (+1.4 MiB idle RSS when linked). */
#define CRYPTO_FNS(X)                                                                              \
    X(X509_free)                                                                                   \
    X(EVP_PKEY_free)                                                                               \
    X(BIO_free)                                                                                    \
    X(X509_get_subject_name)                                                                       \
    X(ERR_clear_error)                                                                             \
    X(X509_time_adj_ex)                                                                            \
    X(X509_set_issuer_name)                                                                        \
    X(X509_get0_notAfter)                                                                          \
    X(X509_check_private_key)                                                                      \
    X(BIO_s_mem)                                                                                   \
    X(BIO_new_mem_buf)                                                                             \
    X(BIO_new)                                                                                     \
    X(ASN1_TIME_to_tm)                                                                             \
    X(X509_verify)                                                                                 \
    X(X509_sign)                                                                                   \
    X(X509_set_version)                                                                            \
    X(X509_set_pubkey)                                                                             \
    X(X509_new)                                                                                    \
    X(X509_getm_notBefore)                                                                         \
    X(X509_getm_notAfter)                                                                          \
    X(X509_get_serialNumber)                                                                       \
    X(X509_get_ext_d2i)                                                                            \
    X(X509_get0_pubkey)                                                                            \
    X(X509_check_issued)                                                                           \
    X(X509_add_ext)                                                                                \
    X(X509_NAME_add_entry_by_txt)                                                                  \
    X(X509_EXTENSION_free)                                                                         \
    X(X509V3_set_ctx)                                                                              \
    X(X509V3_EXT_conf_nid)                                                                         \
    X(PEM_write_bio_X509)                                                                          \
    X(PEM_write_bio_PrivateKey)                                                                    \
    X(PEM_read_bio_X509)                                                                           \
    X(PEM_read_bio_PrivateKey)                                                                     \
    X(GENERAL_NAMES_free)                                                                          \
    X(EVP_sha256)                                                                                  \
    X(ERR_get_error)                                                                               \
    X(ERR_error_string_n)                                                                          \
    X(BN_to_ASN1_INTEGER)                                                                          \
    X(BN_rand)                                                                                     \
    X(BN_new)                                                                                      \
    X(BN_free)                                                                                     \
    X(ASN1_STRING_length)                                                                          \
    X(ASN1_STRING_get0_data)                                                                       \
    X(EVP_PKEY_Q_keygen)                                                                           \
    X(BIO_ctrl)                                                                                    \
    X(OPENSSL_sk_num)                                                                              \
    X(OPENSSL_sk_value)

static struct {
#define DECLARE(f) __typeof__(&f) p_##f;
    CRYPTO_FNS(DECLARE)
#undef DECLARE
} cr;
static pthread_once_t cr_once = PTHREAD_ONCE_INIT;
static const char *cr_missing; /* NULL once every symbol resolved */

static void cr_load(void)
{
    void *lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    cr_missing = lib ? NULL : "libcrypto.so.3";
#define RESOLVE(f)                                                                                 \
    if (lib && !(*(void **)&cr.p_##f = dlsym(lib, #f)))                                            \
        cr_missing = #f;
    CRYPTO_FNS(RESOLVE)
#undef RESOLVE
}

/* 0, or -K8S_ETLS naming what could not be loaded. */
static int crypto_ready(struct k8s_error *reterr)
{
    pthread_once(&cr_once, cr_load);
    return cr_missing ? k8s_error_set(reterr, -K8S_ETLS, "OpenSSL: cannot load %s", cr_missing) : 0;
}

/* A call into the loaded libcrypto. */
#define C(f) (*cr.p_##f)

#define HOUR 3600L
#define DAY  (24 * HOUR)

static int ssl_fail(struct k8s_error *reterr, const char *what)
{
    char why[200] = "unknown error";
    unsigned long e = C(ERR_get_error)();
    if (e)
        C(ERR_error_string_n)(e, why, sizeof(why));
    C(ERR_clear_error)();
    return k8s_error_set(reterr, -K8S_ETLS, "%s: %s", what, why);
}

static char *bio_string(BIO *bio)
{
    char *data = NULL;
    long n = C(BIO_ctrl)(bio, BIO_CTRL_INFO, 0, (char *)&data);
    char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (out) {
        memcpy(out, data, (size_t)n);
        out[n] = '\0';
    }
    return out;
}

static char *cert_to_pem(X509 *x)
{
    BIO *bio = C(BIO_new)(C(BIO_s_mem)());
    char *out = bio && C(PEM_write_bio_X509)(bio, x) == 1 ? bio_string(bio) : NULL;
    C(BIO_free)(bio);
    return out;
}

static char *key_to_pem(EVP_PKEY *k)
{
    BIO *bio = C(BIO_new)(C(BIO_s_mem)());
    char *out = bio && C(PEM_write_bio_PrivateKey)(bio, k, NULL, NULL, 0, NULL, NULL) == 1
                    ? bio_string(bio)
                    : NULL;
    C(BIO_free)(bio);
    return out;
}

static X509 *pem_cert(const char *pem)
{
    BIO *bio = C(BIO_new_mem_buf)(pem, -1);
    X509 *x = bio ? C(PEM_read_bio_X509)(bio, NULL, NULL, NULL) : NULL;
    C(BIO_free)(bio);
    return x;
}

static EVP_PKEY *pem_key(const char *pem)
{
    BIO *bio = C(BIO_new_mem_buf)(pem, -1);
    EVP_PKEY *k = bio ? C(PEM_read_bio_PrivateKey)(bio, NULL, NULL, NULL) : NULL;
    C(BIO_free)(bio);
    return k;
}

static bool add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    C(X509V3_set_ctx)(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *ext = C(X509V3_EXT_conf_nid)(NULL, &ctx, nid, value);
    bool ok = ext && C(X509_add_ext)(x, ext, -1) == 1;
    C(X509_EXTENSION_free)(ext);
    return ok;
}

/* Version 3, a random 127-bit serial, subject CN, validity window. */
static X509 *new_cert(const char *cn, EVP_PKEY *key, time_t now, long days, time_t cap)
{
    X509 *x = C(X509_new)();
    BIGNUM *bn = C(BN_new)();
    bool ok =
        x && bn && C(X509_set_version)(x, 2) == 1 && C(BN_rand)(bn, 127, BN_RAND_TOP_ANY, 0) &&
        C(BN_to_ASN1_INTEGER)(bn, C(X509_get_serialNumber)(x)) && C(X509_set_pubkey)(x, key) == 1;
    time_t nb = now, na = now;
    long after = days * DAY;
    if (cap && now + after > cap)
        after = (long)(cap - now);
    ok = ok && C(X509_time_adj_ex)(C(X509_getm_notBefore)(x), 0, -HOUR, &nb) &&
         C(X509_time_adj_ex)(C(X509_getm_notAfter)(x), 0, after, &na);
    X509_NAME *name = x ? C(X509_get_subject_name)(x) : NULL;
    ok = ok && C(X509_NAME_add_entry_by_txt)(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn,
                                             -1, -1, 0) == 1;
    C(BN_free)(bn);
    if (!ok) {
        C(X509_free)(x);
        return NULL;
    }
    return x;
}

static int finish(X509 *x, EVP_PKEY *key, EVP_PKEY *signer, struct k8s_certmint_pair *ret,
                  struct k8s_error *reterr)
{
    if (C(X509_sign)(x, signer, C(EVP_sha256)()) <= 0)
        return ssl_fail(reterr, "cannot sign the certificate");
    struct k8s_certmint_pair p = {cert_to_pem(x), key_to_pem(key)};
    if (!p.cert_pem || !p.key_pem) {
        k8s_certmint_pair_done(&p);
        return ssl_fail(reterr, "cannot write PEM");
    }
    *ret = p;
    return 0;
}

int k8s_certmint_ca(const char *cn, int days, time_t now, struct k8s_certmint_pair *ret,
                    struct k8s_error *reterr)
{
    if (!cn || !*cn || strlen(cn) > 64 || days < 1)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "a CA needs a name of 1-64 characters and a validity of 1+ days");
    if (crypto_ready(reterr) < 0)
        return -K8S_ETLS;
    EVP_PKEY *key = C(EVP_PKEY_Q_keygen)(NULL, NULL, "EC", "P-256");
    if (!key)
        return ssl_fail(reterr, "cannot generate the CA key");
    X509 *x = new_cert(cn, key, now, days, 0);
    int r;
    if (!x || C(X509_set_issuer_name)(x, C(X509_get_subject_name)(x)) != 1 ||
        !add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        !add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature") ||
        !add_ext(x, x, NID_subject_key_identifier, "hash"))
        r = ssl_fail(reterr, "cannot build the CA certificate");
    else
        r = finish(x, key, key, ret, reterr);
    C(X509_free)(x);
    C(EVP_PKEY_free)(key);
    return r;
}

static int load_ca(const struct k8s_certmint_pair *ca, X509 **ret_cert, EVP_PKEY **ret_key,
                   struct k8s_error *reterr)
{
    X509 *cert = ca && ca->cert_pem ? pem_cert(ca->cert_pem) : NULL;
    EVP_PKEY *key = ca && ca->key_pem ? pem_key(ca->key_pem) : NULL;
    if (!cert || !key || C(X509_check_private_key)(cert, key) != 1) {
        C(X509_free)(cert);
        C(EVP_PKEY_free)(key);
        return ssl_fail(reterr, "unusable CA certificate or key");
    }
    *ret_cert = cert;
    *ret_key = key;
    return 0;
}

static int san_value(const char *const *sans, int n, char *out, size_t cap)
{
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        int w = snprintf(out + used, cap - used, "%sDNS:%s", i ? "," : "", sans[i]);
        if (w < 0 || (size_t)w >= cap - used)
            return -1;
        used += (size_t)w;
    }
    return 0;
}

int k8s_certmint_serving(const struct k8s_certmint_pair *ca, const char *const *sans, int n,
                         int days, time_t now, struct k8s_certmint_pair *ret,
                         struct k8s_error *reterr)
{
    char alt[4096];
    if (n < 1 || n > K8S_CERTMINT_MAX_SANS || days < 1 || strlen(sans[0]) > 64 ||
        san_value(sans, n, alt, sizeof(alt)))
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "a serving certificate needs 1-%d DNS names (the first, its common "
                             "name, at most 64 characters) and 1+ days",
                             K8S_CERTMINT_MAX_SANS);
    if (crypto_ready(reterr) < 0)
        return -K8S_ETLS;
    X509 *ca_cert = NULL;
    EVP_PKEY *ca_key = NULL;
    int r = load_ca(ca, &ca_cert, &ca_key, reterr);
    if (r < 0)
        return r;
    EVP_PKEY *key = C(EVP_PKEY_Q_keygen)(NULL, NULL, "EC", "P-256");
    time_t ca_end = 0;
    struct tm tm;
    if (C(ASN1_TIME_to_tm)(C(X509_get0_notAfter)(ca_cert), &tm) == 1)
        ca_end = timegm(&tm);
    X509 *x = key ? new_cert(sans[0], key, now, days, ca_end) : NULL;
    if (!x || C(X509_set_issuer_name)(x, C(X509_get_subject_name)(ca_cert)) != 1 ||
        !add_ext(x, ca_cert, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(x, ca_cert, NID_key_usage, "critical,digitalSignature,keyEncipherment") ||
        !add_ext(x, ca_cert, NID_ext_key_usage, "serverAuth") ||
        !add_ext(x, ca_cert, NID_authority_key_identifier, "keyid:always") ||
        !add_ext(x, ca_cert, NID_subject_alt_name, alt))
        r = ssl_fail(reterr, "cannot build the serving certificate");
    else
        r = finish(x, key, ca_key, ret, reterr);
    C(X509_free)(x);
    C(EVP_PKEY_free)(key);
    C(X509_free)(ca_cert);
    C(EVP_PKEY_free)(ca_key);
    return r;
}

/* The certificate's DNS SANs equal sans[0..n) as sets. */
static bool same_sans(X509 *x, const char *const *sans, int n)
{
    GENERAL_NAMES *names = C(X509_get_ext_d2i)(x, NID_subject_alt_name, NULL, NULL);
    int count = 0;
    bool ok = names != NULL;
    for (int i = 0; ok && i < C(OPENSSL_sk_num)((const OPENSSL_STACK *)names); i++) {
        const GENERAL_NAME *g = C(OPENSSL_sk_value)((const OPENSSL_STACK *)names, i);
        if (g->type != GEN_DNS)
            continue;
        const char *dns = (const char *)C(ASN1_STRING_get0_data)(g->d.dNSName);
        int len = C(ASN1_STRING_length)(g->d.dNSName);
        bool found = false;
        for (int j = 0; j < n && !found; j++)
            found = (int)strlen(sans[j]) == len && !memcmp(sans[j], dns, (size_t)len);
        ok = found;
        count++;
    }
    C(GENERAL_NAMES_free)(names);
    return ok && count == n;
}

static long seconds_left(X509 *x, time_t now)
{
    struct tm tm;
    if (C(ASN1_TIME_to_tm)(C(X509_get0_notAfter)(x), &tm) != 1)
        return LONG_MIN;
    return (long)(timegm(&tm) - now);
}

int k8s_certmint_check(const char *cert_pem, const char *key_pem, const char *ca_pem,
                       const char *const *sans, int n, time_t now, long renew_before_s,
                       struct k8s_error *reterr)
{
    if (crypto_ready(reterr) < 0)
        return -K8S_ETLS;
    X509 *cert = cert_pem ? pem_cert(cert_pem) : NULL;
    X509 *ca = ca_pem ? pem_cert(ca_pem) : NULL;
    EVP_PKEY *key = key_pem ? pem_key(key_pem) : NULL;
    EVP_PKEY *ca_pub = ca ? C(X509_get0_pubkey)(ca) : NULL;
    int r = -K8S_ETLS;
    if (!cert || !ca || !key)
        k8s_error_set(reterr, r, "the stored %s does not parse",
                      !cert ? "certificate"
                      : !ca ? "CA"
                            : "key");
    else if (C(X509_check_private_key)(cert, key) != 1)
        k8s_error_set(reterr, r, "the stored key does not match the certificate");
    else if (!ca_pub || C(X509_check_issued)(ca, cert) != X509_V_OK ||
             C(X509_verify)(cert, ca_pub) != 1)
        k8s_error_set(reterr, r, "the certificate was not issued by the stored CA");
    else if (!same_sans(cert, sans, n))
        k8s_error_set(reterr, r, "the certificate's DNS names differ from the service's");
    else if (seconds_left(cert, now) <= renew_before_s || seconds_left(ca, now) <= renew_before_s)
        k8s_error_set(reterr, r, "the %s expires within %ld days",
                      seconds_left(cert, now) <= renew_before_s ? "certificate" : "CA",
                      renew_before_s / DAY);
    else
        r = 0;
    C(ERR_clear_error)();
    C(X509_free)(cert);
    C(X509_free)(ca);
    C(EVP_PKEY_free)(key);
    return r;
}

long k8s_certmint_seconds_left(const char *pem, time_t now)
{
    if (crypto_ready(NULL) < 0)
        return LONG_MIN;
    X509 *x = pem ? pem_cert(pem) : NULL;
    long left = x ? seconds_left(x, now) : LONG_MIN;
    C(ERR_clear_error)();
    C(X509_free)(x);
    return left;
}

void k8s_certmint_pair_done(struct k8s_certmint_pair *p)
{
    if (!p)
        return;
    free(p->cert_pem);
    free(p->key_pem);
    p->cert_pem = p->key_pem = NULL;
}
