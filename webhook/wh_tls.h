/*
 * wh_tls — the webhook's serving certificate, reloaded without a restart.
 *
 * The certificate and key are read from files, checked with GnuTLS — the
 * library that serves them — (the chain parses, the key parses and belongs
 * to the leaf, the dates are valid) and handed to libmicrohttpd, which
 * asks for them at every TLS handshake through wh_tls_retrieve. A watcher
 * thread (inotify on the files' directories, plus a periodic stat) swaps
 * in a new pair when the files change — including Kubernetes' atomic
 * symlink swap of a Secret volume — so new handshakes use the new pair
 * while connections already established keep theirs. A pair that fails
 * the checks is not used; the old one stays and the reload is retried.
 *
 * Globals: GnuTLS's retrieve callback has no user pointer, so the active
 * store is a process-wide pointer set by wh_tls_install (one store per
 * process). Thread-safety: wh_tls_retrieve runs on server threads and reads
 * the current pair atomically; everything else is for the owning thread.
 */
#ifndef WH_TLS_H
#define WH_TLS_H

#include <gnutls/abstract.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "k8s_err.h"

struct wh_tls;

/* Called by the watcher after each reload attempt: result 0 = new pair
 * in use, negative = rejected (err says why; the old pair stays). */
typedef void (*wh_tls_reload_fn)(void *ud, int result, const struct k8s_error *err);

/* Load and check the pair. -K8S_ETLS / -K8S_EIO with reterr naming the
 * file and the problem; *ret untouched on failure. */
int wh_tls_new(const char *cert_file, const char *key_file, struct wh_tls **ret,
               struct k8s_error *reterr) K8S_MUST_CHECK;

/* Reload when the files changed since the pair in use was read.
 * *ret_changed is true when a new pair is now in use. */
int wh_tls_reload(struct wh_tls *t, bool *ret_changed, struct k8s_error *reterr) K8S_MUST_CHECK;

/* Start/stop the watcher thread; on_reload may be NULL. */
int wh_tls_watch_start(struct wh_tls *t, wh_tls_reload_fn on_reload, void *ud) K8S_MUST_CHECK;
void wh_tls_watch_stop(struct wh_tls *t);

/* Make t the store wh_tls_retrieve serves from (NULL to clear). */
void wh_tls_install(struct wh_tls *t);

/* notAfter of the pair in use (Unix seconds). */
time_t wh_tls_not_after(const struct wh_tls *t);

/* Stops the watcher and frees every pair. NULL-safe. */
void wh_tls_free(struct wh_tls *t);

/* GnuTLS certificate retrieve callback (MHD_OPTION_HTTPS_CERT_CALLBACK). */
int wh_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *privkey);

#endif
