#include "wh_warn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    json_t *s = json_string(msg);
    if (!s) /* not valid UTF-8: keep the message, lose the odd bytes */
        s = json_string("invalid UTF-8 in warning text");
    json_array_append_new(warnings, s);
}
