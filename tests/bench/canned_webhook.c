/*
 * canned_webhook: the webhook's transport alone — wh_server (libmicrohttpd
 * + GnuTLS, the same threads, TLS priorities, certificate callback and
 * read-ahead) answering every POST /mutate with a canned response after
 * reading the body, without admitting. Against the webhook arm it splits
 * server CPU per request into transport and admission; against nginx's
 * canned arm it shows what our TLS + HTTP path costs beyond nginx's.
 *
 * Usage: canned_webhook RESPONSE.json [webhook flags: --port, --tls-cert-file, ...]
 * Serves until SIGTERM or SIGINT. Exits 1 when it cannot start, 2 on bad flags.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "k8s_arena.h"
#include "k8s_buf.h"
#include "k8s_metrics.h"
#include "wh_config.h"
#include "wh_server.h"
#include "wh_tls.h"

static int serve(struct wh_config *cfg, const char *body, size_t len)
{
    struct k8s_error err = {0};
    struct wh_tls *tls = NULL;
    struct k8s_metrics *m = k8s_metrics_new();
    struct wh_server *srv = NULL;
    if (!m || wh_tls_new(cfg->tls_cert_file, cfg->tls_key_file, &tls, &err) < 0) {
        fprintf(stderr, "canned_webhook: %s\n", m ? err.message : "out of memory");
        k8s_metrics_free(m);
        return 1;
    }
    struct wh_server_deps deps = {
        .cfg = cfg, .tls = tls, .metrics = m, .canned = body, .canned_len = len};
    int rc = 0;
    if (wh_server_new(&deps, &srv) < 0 || wh_server_start(srv, &err) < 0) {
        fprintf(stderr, "canned_webhook: cannot start: %s\n", err.message);
        rc = 1;
    } else {
        sigset_t set;
        int sig;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigwait(&set, &sig);
    }
    wh_server_free(srv);
    wh_tls_free(tls);
    k8s_metrics_free(m);
    return rc;
}

int main(int argc, char **argv)
{
    k8s_arena_jansson_install();
    sigset_t set; /* before any thread: every thread inherits the mask */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        fprintf(stderr, "usage: canned_webhook RESPONSE.json [webhook flags]\n");
        return 2;
    }
    struct wh_config cfg;
    struct k8s_error err = {0};
    wh_config_init(&cfg);
    int argi = 2;
    int r = wh_config_parse_flags(&cfg, argc, argv, &argi, &err);
    cfg.standalone = true;
    if (r == 0)
        r = wh_config_finish(&cfg, &err);
    char *body = NULL;
    size_t len = 0;
    if (r == 0)
        r = k8s_read_file(argv[1], 1 << 24, &body, &len, &err);
    if (r < 0) {
        fprintf(stderr, "canned_webhook: %s\n", err.message);
        wh_config_done(&cfg);
        return 2;
    }
    int rc = serve(&cfg, body, len);
    free(body);
    wh_config_done(&cfg);
    return rc;
}
