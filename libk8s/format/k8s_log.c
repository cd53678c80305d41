#include "k8s_log.h"

#include "k8s_buf.h"
#include "k8s_json.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int log_level = K8S_LOG_INFO;
static int log_fd = 2;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void k8s_log_set_level(int level)
{
    __atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

void k8s_log_set_fd(int fd)
{
    __atomic_store_n(&log_fd, fd, __ATOMIC_RELAXED);
}

bool k8s_log_enabled(int level)
{
    return level <= __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

/* "YYYY-MM-DDTHH:MM:SS.uuuuuuZ"; the seconds part is formatted once per
 * second per thread (out must hold 28 bytes). */
static void format_ts(char *out, size_t cap)
{
    static __thread time_t last = -1;
    static __thread char prefix[24];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    if (tv.tv_sec != last) {
        struct tm tm;
        gmtime_r(&tv.tv_sec, &tm);
        strftime(prefix, sizeof(prefix), "%Y-%m-%dT%H:%M:%S.", &tm);
        last = tv.tv_sec;
    }
    size_t n = strlen(prefix);
    memcpy(out, prefix, n);
    long us = (long)tv.tv_usec;
    for (int i = 5; i >= 0; i--, us /= 10)
        out[n + (size_t)i] = (char)('0' + us % 10);
    memcpy(out + n + 6, "Z", 2);
    (void)cap;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return; /* nowhere left to report a logging failure */
        p += w;
        n -= (size_t)w;
    }
}

/* ---------- buffered per-request lines ---------- */

#define BUFFER_SIZE (64 * 1024)

static struct {
    pthread_mutex_t mu; /* held while lines are appended or written */
    pthread_cond_t cv;  /* the flusher's timer; signalled to stop it */
    bool on;            /* read without the lock first (atomic) */
    bool stop;
    int64_t interval_ns;
    char *buf;
    size_t len;
    pthread_t thread;
} lb = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void flush_locked(void)
{
    if (lb.len)
        write_all(__atomic_load_n(&log_fd, __ATOMIC_RELAXED), lb.buf, lb.len);
    lb.len = 0;
}

/* A whole line: buffered when it may be and buffering is on, else written
 * at once (after whatever is buffered, so the order holds). */
static void emit(const char *line, size_t n, bool bufferable)
{
    if (!__atomic_load_n(&lb.on, __ATOMIC_ACQUIRE)) {
        write_all(__atomic_load_n(&log_fd, __ATOMIC_RELAXED), line, n);
        return;
    }
    pthread_mutex_lock(&lb.mu);
    bool on = lb.buf != NULL; /* k8s_log_unbuffer may have run meanwhile */
    if (on && (!bufferable || n > BUFFER_SIZE - lb.len))
        flush_locked();
    if (on && bufferable && n <= BUFFER_SIZE - lb.len) {
        memcpy(lb.buf + lb.len, line, n);
        lb.len += n;
    } else {
        write_all(__atomic_load_n(&log_fd, __ATOMIC_RELAXED), line, n);
    }
    pthread_mutex_unlock(&lb.mu);
}

static void *flusher(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lb.mu);
    while (!lb.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + lb.interval_ns;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        (void)pthread_cond_timedwait(&lb.cv, &lb.mu, &ts);
        flush_locked();
    }
    pthread_mutex_unlock(&lb.mu);
    return NULL;
}

/* A program that exits without k8s_log_unbuffer loses no gathered line. */
static void at_exit(void)
{
    (void)atexit(k8s_log_flush);
}

int k8s_log_buffer(int64_t interval_ns)
{
    if (__atomic_load_n(&lb.on, __ATOMIC_ACQUIRE) || interval_ns <= 0)
        return interval_ns <= 0 ? -K8S_EINVAL : 0;
    pthread_condattr_t ca;
    if (!(lb.buf = malloc(BUFFER_SIZE)))
        return -K8S_ENOMEM;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&lb.cv, &ca);
    pthread_condattr_destroy(&ca);
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, at_exit);
    lb.interval_ns = interval_ns;
    lb.stop = false;
    lb.len = 0;
    if (pthread_create(&lb.thread, NULL, flusher, NULL) != 0) {
        pthread_cond_destroy(&lb.cv);
        free(lb.buf);
        lb.buf = NULL;
        return -K8S_ENOMEM;
    }
    __atomic_store_n(&lb.on, true, __ATOMIC_RELEASE);
    return 0;
}

void k8s_log_flush(void)
{
    pthread_mutex_lock(&lb.mu);
    flush_locked();
    pthread_mutex_unlock(&lb.mu);
}

void k8s_log_unbuffer(void)
{
    if (!__atomic_load_n(&lb.on, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&lb.mu);
    lb.stop = true;
    pthread_cond_signal(&lb.cv);
    pthread_mutex_unlock(&lb.mu);
    pthread_join(lb.thread, NULL);
    pthread_mutex_lock(&lb.mu); /* lines that came in meanwhile, then none buffered */
    flush_locked();
    __atomic_store_n(&lb.on, false, __ATOMIC_RELEASE);
    free(lb.buf);
    lb.buf = NULL;
    pthread_mutex_unlock(&lb.mu);
    pthread_cond_destroy(&lb.cv);
}

/* {"ts":"...","level":"...","msg":"..." — the line without its close. */
static int line_start(struct k8s_buf *b, int level, const char *msg)
{
    char ts[40];
    format_ts(ts, sizeof(ts));
    int lv = level < 0 ? 0 : level > K8S_LOG_TRACE ? K8S_LOG_TRACE : level;
    const char *m = msg ? msg : "";
    int r =
        k8s_buf_cat(b, "{\"ts\":\"", ts, "\",\"level\":\"", level_names[lv], "\",\"msg\":", NULL);
    return r ? r : k8s_json_write_string(m, strlen(m), b);
}

static void line_end(struct k8s_buf *b, int r)
{
    if (r == 0)
        r = k8s_buf_append(b, "}\n", 2);
    if (r == 0) /* whole lines: lines of concurrent threads never interleave */
        emit(b->data, b->len, false);
    k8s_buf_done(b);
}

void k8s_log_json(int level, const char *msg, json_t *fields)
{
    if (!k8s_log_enabled(level)) {
        json_decref(fields);
        return;
    }
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    int r = line_start(&b, level, msg);
    const char *key;
    json_t *v;
    json_object_foreach(fields, key, v)
    {
        r = r ? r : k8s_buf_append(&b, ",", 1);
        r = r ? r : k8s_json_write_string(key, strlen(key), &b);
        r = r ? r : k8s_buf_append(&b, ":", 1);
        r = r ? r : k8s_json_write(v, &b);
    }
    json_decref(fields);
    line_end(&b, r);
}

/* The line's fields after msg: ,"key":value... */
static char *put_fields(char *t, const struct k8s_log_field *f, size_t n, const size_t klen[],
                        const size_t slen[])
{
    for (size_t i = 0; i < n; i++) {
        t = k8s_put(t, ",\"", 2);
        t = k8s_put(t, f[i].key, klen[i]);
        t = k8s_put(t, "\":", 2);
        t = f[i].str ? k8s_json_put_string(t, f[i].str, slen[i]) : k8s_put_int(t, f[i].num);
    }
    return t;
}

void k8s_log_fields(int level, const char *msg, const struct k8s_log_field *f, size_t n)
{
    if (!k8s_log_enabled(level))
        return;
    size_t klen[K8S_LOG_FIELDS_MAX], slen[K8S_LOG_FIELDS_MAX];
    n = n < K8S_LOG_FIELDS_MAX ? n : K8S_LOG_FIELDS_MAX;
    const char *m = msg ? msg : "";
    size_t ml = strlen(m), bound = 64 + K8S_JSON_STRING_MAX(ml); /* ts, level, msg, close */
    for (size_t i = 0; i < n; i++) {
        klen[i] = strlen(f[i].key);
        slen[i] = f[i].str ? strlen(f[i].str) : 0;
        bound += klen[i] + 4 + (f[i].str ? K8S_JSON_STRING_MAX(slen[i]) : K8S_INT_CHARS);
    }
    char stack[2048], ts[40], *line = bound <= sizeof(stack) ? stack : malloc(bound);
    if (!line)
        return; /* nowhere left to report it */
    int lv = level < 0 ? 0 : level > K8S_LOG_TRACE ? K8S_LOG_TRACE : level;
    format_ts(ts, sizeof(ts));
    char *t = k8s_put(line, "{\"ts\":\"", 7);
    t = k8s_put(t, ts, strlen(ts));
    t = k8s_put(t, "\",\"level\":\"", 11);
    t = k8s_put(t, level_names[lv], strlen(level_names[lv]));
    t = k8s_put(t, "\",\"msg\":", 8);
    t = k8s_json_put_string(t, m, ml);
    t = put_fields(t, f, n, klen, slen);
    t = k8s_put(t, "}\n", 2);
    emit(line, (size_t)(t - line), level >= K8S_LOG_INFO);
    if (line != stack)
        free(line);
}

void k8s_logf(int level, const char *fmt, ...)
{
    if (!k8s_log_enabled(level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    k8s_log_json(level, msg, NULL);
}
