#include "wh_warn.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static bool ascii(const char *s, size_t n)
{
    uint64_t any = 0, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* a word at a time: the high bit of each byte */
        memcpy(&w, s + i, 8);
        any |= w;
    }
    for (; i < n; i++)
        any |= (unsigned char)s[i];
    return !(any & 0x8080808080808080ULL);
}

static bool room(const json_t *warnings)
{
    return json_is_array(warnings) && json_array_size(warnings) < WH_WARN_MAX;
}

/* Keep msg, whose text had `full` bytes before it was cut to fit (msg
 * holds at most WH_WARN_LEN - 1 of them and a NUL). */
static void keep(json_t *warnings, char msg[WH_WARN_LEN], size_t full)
{
    size_t len = full;
    if (full >= WH_WARN_LEN) { /* mark the cut, on a UTF-8 boundary */
        size_t end = WH_WARN_LEN - 4;
        while (end > 0 && ((unsigned char)msg[end] & 0xC0) == 0x80)
            end--;
        memcpy(msg + end, "...", 4);
        len = end + 3;
    }
    size_t i;
    json_t *w;
    json_array_foreach(warnings, i, w) if (!strcmp(json_string_value(w), msg)) return;
    /* ASCII is valid UTF-8: spare jansson's check, a byte at a time */
    json_t *s = ascii(msg, len) ? json_stringn_nocheck(msg, len) : json_string(msg);
    if (!s) /* not valid UTF-8: keep the message, lose the odd bytes */
        s = json_string("invalid UTF-8 in warning text");
    json_array_append_new(warnings, s);
}

/* Append the n bytes at s to msg[*len], cut to fit; counts them all. */
static void put(char msg[WH_WARN_LEN], size_t *len, const char *s, size_t n)
{
    if (*len < WH_WARN_LEN - 1)
        memcpy(msg + *len, s, n < WH_WARN_LEN - 1 - *len ? n : WH_WARN_LEN - 1 - *len);
    *len += n;
}

void wh_warnf(json_t *warnings, const char *fmt, ...)
{
    if (!room(warnings))
        return;
    char msg[WH_WARN_LEN];
    size_t n;
    if (!strchr(fmt, '%')) { /* nothing to format: printf's cost spared */
        n = 0;
        put(msg, &n, fmt, strlen(fmt));
        msg[n < WH_WARN_LEN ? n : WH_WARN_LEN - 1] = '\0';
    } else {
        va_list ap;
        va_start(ap, fmt);
        int r = vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        n = r < 0 ? 0 : (size_t)r;
        if (r < 0)
            msg[0] = '\0';
    }
    keep(warnings, msg, n);
}

void wh_warn_cat(json_t *warnings, ...)
{
    if (!room(warnings))
        return;
    char msg[WH_WARN_LEN];
    size_t n = 0;
    va_list ap;
    va_start(ap, warnings);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
        put(msg, &n, s, strlen(s));
    va_end(ap);
    msg[n < WH_WARN_LEN ? n : WH_WARN_LEN - 1] = '\0';
    keep(warnings, msg, n);
}
