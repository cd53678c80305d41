#include "k8s_jsonskip.h"

#include <stdbool.h>

/* The escapes taken here (\u is left to the general reader). */
static const bool simple_escape[256] = {
    ['"'] = 1, ['\\'] = 1, ['/'] = 1, ['b'] = 1, ['f'] = 1, ['n'] = 1, ['r'] = 1, ['t'] = 1};

/* A string literal at p (its quote): one past its closing quote. */
static const unsigned char *string(const unsigned char *p, const unsigned char *end)
{
    for (p++;;) {
        p = k8s_json_plain_run(p, end);
        if (p >= end)
            return NULL;
        if (*p == '"')
            return p + 1;
        if (*p != '\\' || end - p < 2 || !simple_escape[p[1]])
            return NULL;
        p += 2;
    }
}

/* A member's "key": at p: one past the colon. */
static const unsigned char *key(const unsigned char *p, const unsigned char *end)
{
    if (p >= end || *p != '"' || !(p = string(p, end)) || p >= end || *p != ':')
        return NULL;
    return p + 1;
}

static bool digit(const unsigned char *p, const unsigned char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* RFC 8259's number at p: one past it. */
static const unsigned char *number(const unsigned char *p, const unsigned char *end)
{
    if (*p == '-')
        p++;
    if (!digit(p, end))
        return NULL;
    if (*p++ != '0')
        while (digit(p, end))
            p++;
    if (p < end && *p == '.') {
        if (!digit(++p, end))
            return NULL;
        while (digit(p, end))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!digit(p, end))
            return NULL;
        while (digit(p, end))
            p++;
    }
    return p;
}

static const unsigned char *word(const unsigned char *p, const unsigned char *end, const char *w,
                                 size_t n)
{
    return (size_t)(end - p) >= n && !memcmp(p, w, n) ? p + n : NULL;
}

/* A scalar at p: one past it. */
static const unsigned char *scalar(const unsigned char *p, const unsigned char *end)
{
    switch (*p) {
    case '"':
        return string(p, end);
    case 't':
        return word(p, end, "true", 4);
    case 'f':
        return word(p, end, "false", 5);
    case 'n':
        return word(p, end, "null", 4);
    default:
        return *p == '-' || (*p >= '0' && *p <= '9') ? number(p, end) : NULL;
    }
}

const unsigned char *k8s_json_skip_compact(const unsigned char *p, const unsigned char *end,
                                           int depth, int max_depth)
{
    uint64_t objects = 0; /* bit i: the container at level i is an object */
    int open = 0;
    for (;;) {
        if (p >= end)
            return NULL;
        if (*p == '{' || *p == '[') { /* a container: its first item, or its end */
            bool obj = *p++ == '{';
            if (open == 63 || depth + open + 1 > max_depth)
                return NULL;
            objects = objects << 1 | obj;
            open++;
            if (p < end && *p == (obj ? '}' : ']')) {
                p++;
                open--, objects >>= 1;
            } else {
                if (obj && !(p = key(p, end)))
                    return NULL;
                continue;
            }
        } else if (!(p = scalar(p, end))) {
            return NULL;
        }
        for (;;) { /* after a value: the next item, or the ends of containers */
            if (!open)
                return p;
            if (p >= end)
                return NULL;
            if (*p == ',') {
                p++;
                if ((objects & 1) && !(p = key(p, end)))
                    return NULL;
                break;
            }
            if (*p != ((objects & 1) ? '}' : ']'))
                return NULL;
            p++;
            open--, objects >>= 1;
        }
    }
}
