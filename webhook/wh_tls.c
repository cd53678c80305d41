#include "wh_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "k8s_buf.h"
#include <gnutls/x509.h>
#include "k8s_time.h"

#define MAX_CHAIN       16
#define MAX_PEM         (1 << 20)
#define RETIRE_GRACE_NS (600 * K8S_NSEC_PER_SEC) /* old pairs outlive any handshake */
#define POLL_MS         2000                     /* fallback when inotify misses a change */

/* Identity of a file as last read: a change of any field means "reload". */
struct file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

struct pair {
    gnutls_pcert_st pcert[MAX_CHAIN];
    unsigned int n;
    gnutls_privkey_t key;
    time_t not_after;
    struct file_id cert_id, key_id;
    int64_t retired_at;
    struct pair *next; /* retired list */
};

struct wh_tls {
    char *cert_file, *key_file;
    struct pair *current; /* read atomically by wh_tls_retrieve */
    struct pair *retired; /* owner thread only */
    pthread_t thread;
    bool watching;
    int stop_pipe[2];
    wh_tls_reload_fn on_reload;
    void *ud;
    pthread_mutex_t lock; /* serialises reloads (watcher vs explicit calls) */
};

static struct wh_tls *installed;

static void pair_free(struct pair *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n; i++)
        gnutls_pcert_deinit(&p->pcert[i]);
    if (p->key)
        gnutls_privkey_deinit(p->key);
    free(p);
}

static bool stat_id(const char *path, struct file_id *id)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return false;
    *id = (struct file_id){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    return true;
}

static bool same_id(const struct file_id *a, const struct file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static int import_chain(struct pair *p, const char *pem, size_t len, const char *name,
                        struct k8s_error *reterr)
{
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    p->n = MAX_CHAIN;
    int g = gnutls_pcert_list_import_x509_raw(p->pcert, &p->n, &d, GNUTLS_X509_FMT_PEM, 0);
    if (g < 0) {
        p->n = 0;
        return k8s_error_set(reterr, -K8S_ETLS, "%s: no usable PEM certificate (%s)", name,
                             gnutls_strerror(g));
    }
    return 0;
}

static int import_key(struct pair *p, const char *pem, size_t len, const char *name,
                      struct k8s_error *reterr)
{
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    int g = gnutls_privkey_init(&p->key);
    if (g == 0)
        g = gnutls_privkey_import_x509_raw(p->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (g < 0)
        return k8s_error_set(reterr, -K8S_ETLS, "%s: cannot parse the private key (%s)", name,
                             gnutls_strerror(g));
    return 0;
}

/* Does the private key belong to the leaf certificate? */
static bool key_matches(struct pair *p)
{
    unsigned char a[64], b[64];
    size_t na = sizeof(a), nb = sizeof(b);
    gnutls_pubkey_t pub;
    if (gnutls_pubkey_init(&pub) < 0)
        return false;
    bool ok = gnutls_pubkey_import_privkey(pub, p->key, 0, 0) == 0 &&
              gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256, a, &na) == 0 &&
              gnutls_pubkey_get_key_id(p->pcert[0].pubkey, GNUTLS_KEYID_USE_SHA256, b, &nb) == 0 &&
              na == nb && !memcmp(a, b, na);
    gnutls_pubkey_deinit(pub);
    return ok;
}

static int check_dates(struct pair *p, const char *name, struct k8s_error *reterr)
{
    gnutls_x509_crt_t crt;
    char when[32];
    time_t now = time(NULL), nb = 0;
    if (gnutls_x509_crt_init(&crt) < 0)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    if (gnutls_x509_crt_import(crt, &p->pcert[0].cert, GNUTLS_X509_FMT_DER) == 0) {
        p->not_after = gnutls_x509_crt_get_expiration_time(crt);
        nb = gnutls_x509_crt_get_activation_time(crt);
    }
    gnutls_x509_crt_deinit(crt);
    if (p->not_after <= now) {
        k8s_time_rfc3339(p->not_after, when);
        return k8s_error_set(reterr, -K8S_ETLS, "%s: certificate expired at %s", name, when);
    }
    if (nb > now) {
        k8s_time_rfc3339(nb, when);
        return k8s_error_set(reterr, -K8S_ETLS, "%s: certificate is not valid before %s", name,
                             when);
    }
    return 0;
}

/* Parse and check the pair with GnuTLS, the library that will serve it:
 * the certificate chain parses, the key parses and belongs to the leaf,
 * and the leaf is within its validity dates. */
static int check_pair(struct pair *p, const char *cert, size_t clen, const char *key, size_t klen,
                      const struct wh_tls *t, struct k8s_error *reterr)
{
    int r = import_chain(p, cert, clen, t->cert_file, reterr);
    r = r ? r : import_key(p, key, klen, t->key_file, reterr);
    if (r == 0 && !key_matches(p))
        r = k8s_error_set(reterr, -K8S_ETLS, "%s does not match the certificate in %s", t->key_file,
                          t->cert_file);
    return r ? r : check_dates(p, t->cert_file, reterr);
}

/* Read, check and import the files into a new pair. */
static int load_pair(const struct wh_tls *t, struct pair **ret, struct k8s_error *reterr)
{
    char *cert = NULL, *key = NULL;
    size_t clen = 0, klen = 0;
    struct pair *p = calloc(1, sizeof(*p));
    int r = p ? 0 : k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    if (r == 0 && !stat_id(t->cert_file, &p->cert_id))
        r = k8s_error_set(reterr, -K8S_EIO, "%s: %s", t->cert_file, strerror(errno));
    if (r == 0 && !stat_id(t->key_file, &p->key_id))
        r = k8s_error_set(reterr, -K8S_EIO, "%s: %s", t->key_file, strerror(errno));
    if (r == 0)
        r = k8s_read_file(t->cert_file, MAX_PEM, &cert, &clen, reterr);
    if (r == 0)
        r = k8s_read_file(t->key_file, MAX_PEM, &key, &klen, reterr);
    if (r == 0)
        r = check_pair(p, cert, clen, key, klen, t, reterr);
    if (key)
        explicit_bzero(key, klen);
    free(cert);
    free(key);
    if (r < 0) {
        pair_free(p);
        return r;
    }
    *ret = p;
    return 0;
}

int wh_tls_new(const char *cert_file, const char *key_file, struct wh_tls **ret,
               struct k8s_error *reterr)
{
    struct wh_tls *t = calloc(1, sizeof(*t));
    if (!t)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    t->stop_pipe[0] = t->stop_pipe[1] = -1;
    pthread_mutex_init(&t->lock, NULL);
    t->cert_file = strdup(cert_file);
    t->key_file = strdup(key_file);
    int r = t->cert_file && t->key_file ? load_pair(t, &t->current, reterr)
                                        : k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    if (r < 0) {
        wh_tls_free(t);
        return r;
    }
    *ret = t;
    return 0;
}

/* Free retired pairs whose grace period is over. */
static void reap(struct wh_tls *t, int64_t now)
{
    for (struct pair **pp = &t->retired; *pp;) {
        if (now - (*pp)->retired_at > RETIRE_GRACE_NS) {
            struct pair *dead = *pp;
            *pp = dead->next;
            pair_free(dead);
        } else {
            pp = &(*pp)->next;
        }
    }
}

int wh_tls_reload(struct wh_tls *t, bool *ret_changed, struct k8s_error *reterr)
{
    struct file_id c, k;
    *ret_changed = false;
    pthread_mutex_lock(&t->lock);
    struct pair *cur = t->current, *fresh = NULL;
    int r = 0;
    reap(t, k8s_mono_ns());
    if (stat_id(t->cert_file, &c) && stat_id(t->key_file, &k) && same_id(&c, &cur->cert_id) &&
        same_id(&k, &cur->key_id))
        goto out_unlock; /* unchanged */
    r = load_pair(t, &fresh, reterr);
    if (r < 0)
        goto out_unlock;
    __atomic_store_n(&t->current, fresh, __ATOMIC_RELEASE);
    cur->retired_at = k8s_mono_ns();
    cur->next = t->retired;
    t->retired = cur;
    *ret_changed = true;
out_unlock:
    pthread_mutex_unlock(&t->lock);
    return r;
}

time_t wh_tls_not_after(const struct wh_tls *t)
{
    const struct pair *p = __atomic_load_n(&t->current, __ATOMIC_ACQUIRE);
    return p ? p->not_after : 0;
}

void wh_tls_install(struct wh_tls *t)
{
    __atomic_store_n(&installed, t, __ATOMIC_RELEASE);
}

int wh_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
    struct wh_tls *t = __atomic_load_n(&installed, __ATOMIC_ACQUIRE);
    struct pair *p = t ? __atomic_load_n(&t->current, __ATOMIC_ACQUIRE) : NULL;
    if (!p)
        return -1;
    *pcert = p->pcert;
    *pcert_length = p->n;
    *privkey = p->key;
    return 0;
}

/* ---------- watcher ---------- */

static void watch_dir(int fd, const char *file)
{
    char *copy = strdup(file);
    if (!copy)
        return;
    (void)inotify_add_watch(fd, dirname(copy),
                            IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_ATTRIB |
                                IN_DELETE_SELF | IN_MOVE_SELF);
    free(copy);
}

static void try_reload(struct wh_tls *t, bool *pending)
{
    struct k8s_error err = {0};
    bool changed = false;
    int r = wh_tls_reload(t, &changed, &err);
    *pending = r < 0; /* a half-written rotation: try again on the next tick */
    if ((changed || r < 0) && t->on_reload)
        t->on_reload(t->ud, r, &err);
}

static void *watch_main(void *arg)
{
    struct wh_tls *t = arg;
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (in >= 0) {
        watch_dir(in, t->cert_file);
        watch_dir(in, t->key_file);
    }
    bool pending = false;
    for (;;) {
        struct pollfd fds[2] = {{t->stop_pipe[0], POLLIN, 0}, {in, POLLIN, 0}};
        int n = poll(fds, in >= 0 ? 2 : 1, pending ? 500 : POLL_MS);
        if (n > 0 && fds[0].revents)
            break;
        if (n > 0 && fds[1].revents) {
            char buf[4096];
            while (read(in, buf, sizeof(buf)) > 0)
                ;
            usleep(50 * 1000); /* let the writer finish the swap */
        }
        try_reload(t, &pending);
    }
    if (in >= 0)
        close(in);
    return NULL;
}

int wh_tls_watch_start(struct wh_tls *t, wh_tls_reload_fn on_reload, void *ud)
{
    if (pipe2(t->stop_pipe, O_CLOEXEC) < 0)
        return -K8S_EIO;
    t->on_reload = on_reload;
    t->ud = ud;
    if (pthread_create(&t->thread, NULL, watch_main, t) != 0)
        return -K8S_ENOMEM;
    t->watching = true;
    return 0;
}

void wh_tls_watch_stop(struct wh_tls *t)
{
    if (!t || !t->watching)
        return;
    (void)!write(t->stop_pipe[1], "x", 1);
    pthread_join(t->thread, NULL);
    t->watching = false;
}

void wh_tls_free(struct wh_tls *t)
{
    if (!t)
        return;
    wh_tls_watch_stop(t);
    if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE) == t)
        wh_tls_install(NULL);
    for (int i = 0; i < 2; i++)
        if (t->stop_pipe[i] >= 0)
            close(t->stop_pipe[i]);
    pair_free(t->current);
    while (t->retired) {
        struct pair *p = t->retired;
        t->retired = p->next;
        pair_free(p);
    }
    pthread_mutex_destroy(&t->lock);
    free(t->cert_file);
    free(t->key_file);
    free(t);
}
