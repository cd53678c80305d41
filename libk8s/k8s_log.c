#include "k8s_log.h"

#include "k8s_buf.h"
#include "k8s_json.h"

#include <stdarg.h>
#include <stdio.h>
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

static void format_ts(char *out, size_t cap)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, cap - n, ".%06ldZ", (long)tv.tv_usec);
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

void k8s_log_json(int level, const char *msg, json_t *fields)
{
    if (!k8s_log_enabled(level)) {
        json_decref(fields);
        return;
    }
    char ts[40];
    format_ts(ts, sizeof(ts));
    int lv = level < 0 ? 0 : level > K8S_LOG_TRACE ? K8S_LOG_TRACE : level;
    json_t *line = json_object();
    if (!line) {
        json_decref(fields);
        return;
    }
    json_object_set_new(line, "ts", json_string(ts));
    json_object_set_new(line, "level", json_string(level_names[lv]));
    json_object_set_new(line, "msg", json_string(msg ? msg : ""));
    if (fields)
        json_object_update(line, fields);
    json_decref(fields);
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    int r = k8s_json_write(line, &b);
    json_decref(line);
    if (r == 0 && k8s_buf_append(&b, "\n", 1) == 0) /* one write for the whole line */
        write_all(__atomic_load_n(&log_fd, __ATOMIC_RELAXED), b.data, b.len);
    k8s_buf_done(&b);
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
