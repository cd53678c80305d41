/*
 * canned_webhook: the webhook's transport alone — wh_server (libmicrohttpd
 * + GnuTLS, the same threads, TLS priorities, certificate callback and
 * read-ahead) answering every POST /mutate with a canned response after
 * reading the body, without admitting. Against the webhook arm it splits
 * server CPU per request into transport and admission; against nginx's
 * canned arm it shows what our TLS + HTTP path costs beyond nginx's.
 *
 * When RESPONSE.json's uid is the string "$UID", each answer carries the
 * request's uid in its place (the API server refuses an answer with
 * another): the review's first "uid" string, which in the API server's
 * encoding is request.uid. With a patch in it, that is a webhook that
 * costs nothing (bench_apiserver.py's oracle arms).
 *
 * Usage: canned_webhook RESPONSE.json [webhook flags: --port, --tls-cert-file, ...]
 * Serves until SIGTERM or SIGINT. Exits 1 when it cannot start, 2 on bad flags.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_arena.h"
#include "k8s_buf.h"
#include "k8s_metrics.h"
#include "wh_config.h"
#include "wh_server.h"
#include "wh_tls.h"

#define UID_MARK "\"uid\":\""
#define UID_HOLE UID_MARK "$UID\""

/* The canned answer, split around its "$UID" when it has one. */
struct canned {
    const char *body;
    size_t len;
    size_t hole; /* offset of $UID's first byte; len when there is none */
};

/* The request's uid: the value of the first "uid" key (NULL when none). */
static const char *request_uid(const char *body, size_t len, size_t *ret_len)
{
    const char *p = memmem(body, len, UID_MARK, strlen(UID_MARK));
    if (!p)
        return NULL;
    p += strlen(UID_MARK);
    const char *q = memchr(p, '"', len - (size_t)(p - body));
    if (!q)
        return NULL;
    *ret_len = (size_t)(q - p);
    return p;
}

static int answer(void *ud, const char *body, size_t len, char **ret, size_t *ret_len)
{
    const struct canned *c = ud;
    size_t ulen = 0, tail = c->hole + strlen("$UID");
    const char *uid = c->hole < c->len ? request_uid(body, len, &ulen) : NULL;
    size_t n = uid ? c->len - strlen("$UID") + ulen : c->len;
    char *out = malloc(n ? n : 1);
    if (!out)
        return -1;
    if (!uid) {
        memcpy(out, c->body, c->len);
    } else {
        memcpy(out, c->body, c->hole);
        memcpy(out + c->hole, uid, ulen);
        memcpy(out + c->hole + ulen, c->body + tail, c->len - tail);
    }
    *ret = out;
    *ret_len = n;
    return 0;
}

static int serve(struct wh_config *cfg, const char *body, size_t len)
{
    struct canned canned = {.body = body, .len = len, .hole = len};
    const char *hole = memmem(body, len, UID_HOLE, strlen(UID_HOLE));
    if (hole)
        canned.hole = (size_t)(hole - body) + strlen(UID_MARK);
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
        .cfg = cfg, .tls = tls, .metrics = m, .canned = answer, .canned_ud = &canned};
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
