#include "op_cron.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define F "spec.schedule: "

/* The five fields, one row each. */
static const struct field {
    const char *name;
    int lo, hi;
    const char *const *names; /* names[i] is lo + i; NULL: numbers only */
} fields[] = {
    {"minute", 0, 59, NULL},
    {"hour", 0, 23, NULL},
    {"day of month", 1, 31, NULL},
    {"month", 1, 12,
     (const char *const[]){"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT",
                           "NOV", "DEC", NULL}},
    {"day of week", 0, 7,
     (const char *const[]){"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", NULL}},
};

static const struct {
    const char *macro, *spec;
} macros[] = {{"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
              {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
              {"@hourly", "0 * * * *"}};

/* A number or a name of f at *p (moving *p past it). */
static bool value(const struct field *f, const char **p, int *out)
{
    if (**p >= '0' && **p <= '9') {
        char *end;
        long v = strtol(*p, &end, 10);
        *p = end;
        *out = (int)(v > 1000 ? 1000 : v);
        return true;
    }
    for (int i = 0; f->names && f->names[i]; i++)
        if (!strncasecmp(*p, f->names[i], 3)) {
            *out = f->lo + i;
            *p += 3;
            return true;
        }
    return false;
}

/* One list item ("*", "a", "a-b", each with an optional "/step") into *bits. */
static int item(const struct field *f, const char *s, size_t len, uint64_t *bits,
                struct k8s_error *reterr)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%.*s", (int)len, s);
    const char *p = buf;
    int lo = f->lo, hi = f->hi, step = 1;
    if (*p == '*') {
        p++;
    } else {
        if (!value(f, &p, &lo))
            return k8s_error_set(reterr, -K8S_EINVAL, F "%s: \"%s\" is not a value", f->name, buf);
        hi = lo;
        if (*p == '-' && (p++, !value(f, &p, &hi)))
            return k8s_error_set(reterr, -K8S_EINVAL, F "%s: \"%s\" is not a range", f->name, buf);
    }
    if (*p == '/') {
        char *end;
        step = (int)strtol(p + 1, &end, 10);
        if (end == p + 1 || step < 1)
            return k8s_error_set(reterr, -K8S_EINVAL, F "%s: \"%s\" has no step of at least 1",
                                 f->name, buf);
        p = end;
        if (hi == lo && buf[0] != '*')
            hi = f->hi; /* "a/n": from a to the end */
    }
    if (*p)
        return k8s_error_set(reterr, -K8S_EINVAL, F "%s: \"%s\" is not a value", f->name, buf);
    if (lo < f->lo || hi > f->hi || lo > hi)
        return k8s_error_set(reterr, -K8S_EINVAL, F "%s: %s is out of range %d-%d", f->name, buf,
                             f->lo, f->hi);
    for (int v = lo; v <= hi; v += step)
        *bits |= 1ULL << v;
    return 0;
}

/* A comma-separated field into *bits; *any when it is "*". */
static int field(const struct field *f, const char *s, size_t len, uint64_t *bits, bool *any,
                 struct k8s_error *reterr)
{
    *bits = 0;
    *any = len == 1 && s[0] == '*';
    for (size_t at = 0; at <= len;) {
        size_t n = 0;
        while (at + n < len && s[at + n] != ',')
            n++;
        if (!n)
            return k8s_error_set(reterr, -K8S_EINVAL, F "%s: an empty list item", f->name);
        int r = item(f, s + at, n, bits, reterr);
        if (r < 0)
            return r;
        at += n + 1;
    }
    return 0;
}

static int parse5(const char *spec, struct op_cron *c, struct k8s_error *reterr)
{
    uint64_t bits[5];
    bool any[5];
    const char *p = spec;
    for (int i = 0; i < 5; i++) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strcspn(p, " \t");
        if (!n)
            return k8s_error_set(reterr, -K8S_EINVAL,
                                 F "\"%s\" has %d fields; cron takes 5 (minute hour day-of-month "
                                   "month day-of-week) or a macro such as @hourly",
                                 spec, i);
        int r = field(&fields[i], p, n, &bits[i], &any[i], reterr);
        if (r < 0)
            return r;
        p += n;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p)
        return k8s_error_set(reterr, -K8S_EINVAL, F "\"%s\" has more than 5 fields", spec);
    *c = (struct op_cron){.minute = bits[0],
                          .hour = (uint32_t)bits[1],
                          .dom = (uint32_t)bits[2],
                          .month = (uint32_t)bits[3],
                          .dow = (uint8_t)(bits[4] | (bits[4] >> 7)), /* 7 is Sunday too */
                          .dom_any = any[2],
                          .dow_any = any[4]};
    return 0;
}

int op_cron_parse(const char *spec, struct op_cron *ret, struct k8s_error *reterr)
{
    if (!spec)
        return k8s_error_set(reterr, -K8S_EINVAL, F "required");
    for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
        if (!strcmp(spec, macros[i].macro))
            return parse5(macros[i].spec, ret, reterr);
    if (spec[0] == '@')
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "\"%s\" is not a macro (@yearly, @monthly, @weekly, @daily, "
                               "@hourly)",
                             spec);
    return parse5(spec, ret, reterr);
}

static bool day_matches(const struct op_cron *c, const struct tm *t)
{
    bool dom = c->dom >> t->tm_mday & 1, dow = c->dow >> t->tm_wday & 1;
    if (c->dom_any || c->dow_any)
        return dom && dow;
    return dom || dow;
}

int64_t op_cron_next(const struct op_cron *c, int64_t after_s)
{
    time_t t = (time_t)(after_s - after_s % 60 + 60); /* the next whole minute */
    time_t end = t + 5 * 366 * 86400;
    struct tm tm;
    while (t < end) {
        gmtime_r(&t, &tm);
        if (!(c->month >> (tm.tm_mon + 1) & 1)) { /* to the next month's first minute */
            tm.tm_mon++, tm.tm_mday = 1, tm.tm_hour = tm.tm_min = 0;
        } else if (!day_matches(c, &tm)) {
            tm.tm_mday++, tm.tm_hour = tm.tm_min = 0;
        } else if (!(c->hour >> tm.tm_hour & 1)) {
            tm.tm_hour++, tm.tm_min = 0;
        } else if (!(c->minute >> tm.tm_min & 1)) {
            tm.tm_min++;
        } else {
            return (int64_t)t;
        }
        tm.tm_sec = 0;
        t = timegm(&tm);
    }
    return -1;
}

/* The latest tick in (from, now], scanning forward. */
static int64_t last_in(const struct op_cron *c, int64_t from, int64_t now_s)
{
    int64_t last = -1;
    for (int64_t t = op_cron_next(c, from); t >= 0 && t <= now_s; t = op_cron_next(c, t))
        last = t;
    return last;
}

int64_t op_cron_last(const struct op_cron *c, int64_t after_s, int64_t now_s)
{
    /* look back over growing windows, so a long outage of an every-minute
     * schedule walks an hour of ticks, not a year of them */
    static const int64_t window[] = {3600, 86400, 32 * 86400, 367 * 86400, 6 * 366 * 86400};
    for (size_t i = 0; i < sizeof(window) / sizeof(window[0]); i++) {
        int64_t from = now_s - window[i] > after_s ? now_s - window[i] : after_s;
        int64_t t = last_in(c, from, now_s);
        if (t >= 0 || from == after_s)
            return t;
    }
    return -1;
}
