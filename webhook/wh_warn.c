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

void wh_warnf(json_t *warnings, const char *fmt, ...)
{
    if (!json_is_array(warnings) || json_array_size(warnings) >= WH_WARN_MAX)
        return;
    char msg[WH_WARN_LEN];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof(msg)) /* mark the cut, on a UTF-8 boundary */
    {
        size_t end = sizeof(msg) - 4;
        while (end > 0 && ((unsigned char)msg[end] & 0xC0) == 0x80)
            end--;
        memcpy(msg + end, "...", 4);
    }
    size_t i;
    json_t *w;
    json_array_foreach(warnings, i, w) if (!strcmp(json_string_value(w), msg)) return;
    size_t len = strlen(msg);
    /* ASCII is valid UTF-8: spare jansson's check, a byte at a time */
    json_t *s = ascii(msg, len) ? json_stringn_nocheck(msg, len) : json_string(msg);
    if (!s) /* not valid UTF-8: keep the message, lose the odd bytes */
        s = json_string("invalid UTF-8 in warning text");
    json_array_append_new(warnings, s);
}
