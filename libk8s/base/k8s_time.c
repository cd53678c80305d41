#include "k8s_time.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int64_t k8s_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * K8S_NSEC_PER_SEC + ts.tv_nsec;
}

int64_t k8s_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * K8S_NSEC_PER_SEC + ts.tv_nsec;
}

void k8s_time_rfc3339(time_t t, char out[static 21])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void k8s_time_rfc3339_micro(int64_t unix_ns, char out[static 28])
{
    time_t t = (time_t)(unix_ns / K8S_NSEC_PER_SEC);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 20, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + 19, 9, ".%06dZ", (int)(unix_ns % K8S_NSEC_PER_SEC / 1000));
}

/* Go's time.Duration.String for whole seconds and up, e.g. "1h0m0s",
 * "65m0s" → "1h5m0s", "1.5s"; below a second "300ms", "0s". */
void k8s_duration_format(int64_t ns, char out[static 32])
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (u == 0) {
        snprintf(out, 32, "0s");
        return;
    }
    if (u < (uint64_t)K8S_NSEC_PER_SEC) {
        if (u % 1000000 == 0)
            snprintf(out, 32, "%s%llums", sign, (unsigned long long)(u / 1000000));
        else if (u % 1000 == 0)
            snprintf(out, 32, "%s%lluµs", sign, (unsigned long long)(u / 1000));
        else
            snprintf(out, 32, "%s%lluns", sign, (unsigned long long)u);
        return;
    }
    uint64_t h = u / (3600 * (uint64_t)K8S_NSEC_PER_SEC);
    uint64_t m = u / (60 * (uint64_t)K8S_NSEC_PER_SEC) % 60;
    uint64_t s = u / K8S_NSEC_PER_SEC % 60, frac = u % K8S_NSEC_PER_SEC;
    char secs[24];
    int n = snprintf(secs, sizeof(secs), "%llu", (unsigned long long)s);
    if (frac) {
        n += snprintf(secs + n, sizeof(secs) - n, ".%09llu", (unsigned long long)frac);
        while (secs[n - 1] == '0')
            secs[--n] = '\0';
    }
    if (h)
        snprintf(out, 32, "%s%lluh%llum%ss", sign, (unsigned long long)h, (unsigned long long)m,
                 secs);
    else if (m)
        snprintf(out, 32, "%s%llum%ss", sign, (unsigned long long)m, secs);
    else
        snprintf(out, 32, "%s%ss", sign, secs);
}

static int digits(const char **p, int n, int *ret)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -K8S_EPARSE;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *ret = v;
    return 0;
}

int k8s_time_parse_rfc3339(const char *s, time_t *ret)
{
    int Y, M, D, h, m, sec, oh = 0, om = 0;
    const char *p = s;
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' || digits(&p, 2, &D) ||
        (*p != 'T' && *p != 't' && *p != ' '))
        return -K8S_EPARSE;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' || digits(&p, 2, &sec))
        return -K8S_EPARSE;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -K8S_EPARSE;
        while (isdigit((unsigned char)*p))
            p++;
    }
    int sign = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '+' ? 1 : -1;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om))
            return -K8S_EPARSE;
    } else {
        return -K8S_EPARSE;
    }
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
    if (*p || M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || (M == 2 && D == 29 && !leap) ||
        h > 23 || m > 59 || sec > 60 || oh > 23 || om > 59)
        return -K8S_EPARSE;
    struct tm tm = {.tm_year = Y - 1900,
                    .tm_mon = M - 1,
                    .tm_mday = D,
                    .tm_hour = h,
                    .tm_min = m,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    *ret = t - sign * (oh * 3600 + om * 60);
    return 0;
}

struct unit {
    const char *name;
    int64_t ns;
};

static const struct unit units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
    {"\xce\xbcs", 1000}, /* U+03BC Greek mu */
    {"ms", 1000000},
    {"s", K8S_NSEC_PER_SEC},
    {"m", 60 * K8S_NSEC_PER_SEC},
    {"h", 3600 * K8S_NSEC_PER_SEC},
};

static const struct unit *match_unit(const char *p, size_t *ret_len)
{
    size_t n = 0;
    while (p[n] && p[n] != '.' && !isdigit((unsigned char)p[n]))
        n++;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strlen(units[i].name) == n && !memcmp(p, units[i].name, n)) {
            *ret_len = n;
            return &units[i];
        }
    return NULL;
}

#define LIMIT ((uint64_t)1 << 63)

/* [0-9]* as an integer; false on overflow past 2^63. */
static bool leading_int(const char **pp, uint64_t *ret)
{
    uint64_t x = 0;
    const char *p = *pp;
    for (; isdigit((unsigned char)*p); p++) {
        if (x > LIMIT / 10)
            return false;
        x = x * 10 + (uint64_t)(*p - '0');
        if (x > LIMIT)
            return false;
    }
    *pp = p;
    *ret = x;
    return true;
}

/* Digits after the point, as Go takes them: extra precision is dropped. */
static void leading_fraction(const char **pp, uint64_t *ret, double *scale)
{
    uint64_t x = 0;
    bool overflow = false;
    *scale = 1;
    for (; isdigit((unsigned char)**pp); (*pp)++) {
        if (overflow)
            continue;
        if (x > (LIMIT - 1) / 10) {
            overflow = true;
            continue;
        }
        uint64_t y = x * 10 + (uint64_t)(**pp - '0');
        if (y > LIMIT) {
            overflow = true;
            continue;
        }
        x = y;
        *scale *= 10;
    }
    *ret = x;
}

/* One "<number><unit>" component, Go's time.ParseDuration arithmetic:
 * integer part times the unit, plus the fraction through a double,
 * truncated. Returns false when malformed or out of range. */
static bool component(const char **pp, uint64_t *acc)
{
    const char *p = *pp, *start = p;
    uint64_t v = 0, f = 0;
    double scale = 1;
    if (*p != '.' && !isdigit((unsigned char)*p))
        return false;
    if (!leading_int(&p, &v))
        return false;
    bool pre = p != start, post = false;
    if (*p == '.') {
        const char *frac = ++p;
        leading_fraction(&p, &f, &scale);
        post = p != frac;
    }
    size_t ulen;
    const struct unit *u = (pre || post) ? match_unit(p, &ulen) : NULL;
    if (!u || v > LIMIT / (uint64_t)u->ns)
        return false;
    v *= (uint64_t)u->ns;
    if (f > 0 && (v += (uint64_t)((double)f * ((double)u->ns / scale))) > LIMIT)
        return false;
    if ((*acc += v) > LIMIT)
        return false;
    *pp = p + ulen;
    return true;
}

int k8s_duration_parse(const char *s, int64_t *ret_ns, struct k8s_error *reterr)
{
    const char *p = s;
    bool neg = false;
    if (!s || !*s)
        return k8s_error_set(reterr, -K8S_EINVAL, "invalid duration \"\"");
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (!strcmp(p, "0")) {
        *ret_ns = 0;
        return 0;
    }
    if (!*p)
        return k8s_error_set(reterr, -K8S_EINVAL, "invalid duration \"%s\"", s);
    uint64_t total = 0;
    while (*p)
        if (!component(&p, &total))
            return k8s_error_set(reterr, -K8S_EINVAL,
                                 "invalid duration \"%s\" (want e.g. 300ms, 5m, 1h30m)", s);
    if (!neg && total > LIMIT - 1)
        return k8s_error_set(reterr, -K8S_EINVAL, "invalid duration \"%s\": out of range", s);
    *ret_ns = neg ? (int64_t)(0 - total) : (int64_t)total;
    return 0;
}

void k8s_cond_init_mono(pthread_cond_t *cond)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
}
