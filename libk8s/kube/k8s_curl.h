/*
 * k8s_curl — libcurl, loaded when first needed (dlopen) instead of at
 * program start.
 *
 * libcurl (Debian's OpenSSL flavour) is linked BIND_NOW against thirteen
 * libraries (OpenSSL, Kerberos, LDAP, libssh2, ...): loading it costs
 * ~3.5 MiB of resident memory and startup time. The webhook needs it only
 * in a cluster (API client, GKE metadata), never in --standalone mode or in
 * the offline commands, so it reaches libcurl through this table, filled by
 * k8s_curl_load. Types and constants still come from <curl/curl.h>.
 *
 * Thread-safety: k8s_curl_load is idempotent and thread-safe (it also runs
 * curl_global_init once); the table is read-only afterwards.
 */
#ifndef K8S_CURL_H
#define K8S_CURL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "k8s_err.h"

struct k8s_curl_api {
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *h);
    void (*easy_reset)(CURL *h);
    CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *h);
    CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
    CURLcode (*easy_pause)(CURL *h, int bitmask);
    const char *(*easy_strerror)(CURLcode cc);
    char *(*easy_escape)(CURL *h, const char *s, int len);
    void (*free)(void *p);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
    CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
    CURLMcode (*multi_perform)(CURLM *m, int *running);
    CURLMcode (*multi_socket_action)(CURLM *m, curl_socket_t s, int ev_bitmask, int *running);
    CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd *extra, unsigned n, int timeout_ms,
                            int *numfds);
    CURLMcode (*multi_wakeup)(CURLM *m);
    CURLMsg *(*multi_info_read)(CURLM *m, int *left);
    CURLMcode (*multi_setopt)(CURLM *m, CURLMoption opt, ...);
    CURLMcode (*multi_cleanup)(CURLM *m);
};

/* The table; valid after a successful k8s_curl_load. */
extern struct k8s_curl_api k8s_curl;

/* Load libcurl and run curl_global_init, once. -K8S_EIO with reterr naming
 * the library when it cannot be loaded. */
int k8s_curl_load(struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
