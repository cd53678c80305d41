#include "k8s_time.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
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
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
        digits(&p, 2, &D) || (*p != 'T' && *p != 't' && *p != ' '))
        return -K8S_EPARSE;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' ||
        digits(&p, 2, &sec))
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
    if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return -K8S_EPARSE;
    struct tm tm = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D,
                    .tm_hour = h, .tm_min = m, .tm_sec = sec};
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

/* One "<number><unit>" component; adds it to *acc (as a long double so that
 * fractions like 1.5h are exact enough, then range-checked). */
static int component(const char **pp, long double *acc)
{
    const char *p = *pp, *start = p;
    char num[64];
    while (isdigit((unsigned char)*p))
        p++;
    bool int_part = p > start;
    if (*p == '.') {
        p++;
        const char *frac = p;
        while (isdigit((unsigned char)*p))
            p++;
        if (!int_part && p == frac)
            return -1;
    } else if (!int_part) {
        return -1;
    }
    size_t n = (size_t)(p - start);
    if (n >= sizeof(num))
        return -1;
    memcpy(num, start, n);
    num[n] = '\0';
    size_t ulen;
    const struct unit *u = match_unit(p, &ulen);
    if (!u)
        return -1;
    *acc += strtold(num, NULL) * (long double)u->ns;
    *pp = p + ulen;
    return 0;
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
    long double total = 0;
    while (*p)
        if (component(&p, &total) < 0)
            return k8s_error_set(reterr, -K8S_EINVAL,
                                 "invalid duration \"%s\" (want e.g. 300ms, 5m, 1h30m)", s);
    if (total > (long double)INT64_MAX)
        return k8s_error_set(reterr, -K8S_EINVAL, "invalid duration \"%s\": out of range", s);
    *ret_ns = (int64_t)total * (neg ? -1 : 1);
    return 0;
}
