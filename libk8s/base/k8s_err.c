#include "k8s_err.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const names[K8S_ERR_MAX] = {
    [K8S_OK] = "ok",
    [K8S_ENOMEM] = "out of memory",
    [K8S_EINVAL] = "invalid argument",
    [K8S_EIO] = "I/O error",
    [K8S_ETIMEDOUT] = "timed out",
    [K8S_ETLS] = "TLS error",
    [K8S_EPARSE] = "parse error",
    [K8S_ENOTFOUND] = "not found",
    [K8S_ECONFLICT] = "conflict",
    [K8S_EGONE] = "gone",
    [K8S_ETHROTTLED] = "too many requests",
    [K8S_ESERVER] = "server error",
    [K8S_EINVALID] = "invalid object",
    [K8S_EFORBIDDEN] = "forbidden",
    [K8S_ETOOBIG] = "too large",
    [K8S_EUNAVAIL] = "not available",
    [K8S_ETERMINAL] = "terminal error",
};

const char *k8s_strerror(int err)
{
    if (err < 0)
        err = -err;
    if (err >= K8S_ERR_MAX)
        return "unknown error";
    return names[err];
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none:
 * RFC 3629, no overlong forms, no surrogates. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80                    ? 1
                 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
                 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
                 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                                : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
        return 0;
    return len;
}

/* C0, DEL, or C1 (U+0080..U+009F: C2 80..C2 9F)? */
static bool control_at(const unsigned char *s, size_t len)
{
    return (len == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (len == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

/* In place: every control character or invalid byte becomes '?'; a
 * sequence cut at the end is dropped. */
static void one_clean_line(char *msg)
{
    unsigned char *s = (unsigned char *)msg;
    size_t n = strlen(msg), w = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq(s + i, n - i);
        if (len == 0 && s[i] >= 0xc2 && n - i < 4) { /* a character cut by the bound */
            bool cut = true;
            for (size_t k = i + 1; k < n; k++)
                cut = cut && (s[k] & 0xc0) == 0x80;
            if (cut)
                break;
        }
        if (len == 0 || control_at(s + i, len)) {
            s[w++] = '?';
            i += len ? len : 1;
            continue;
        }
        memmove(s + w, s + i, len);
        w += len;
        i += len;
    }
    s[w] = '\0';
}

const char *k8s_quote(char out[K8S_QUOTE_CAP], const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t w = 0, i = 0;
    while (i < n && i < K8S_QUOTE_SHOWN) {
        size_t len = utf8_seq(s + i, n - i);
        if (len > 1 && i + len > K8S_QUOTE_SHOWN)
            break; /* never half a character */
        if (len == 1 && (s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) {
            out[w++] = '\\';
            out[w++] = s[i] == '\n' ? 'n' : s[i] == '\t' ? 't' : 'r';
        } else if (len == 0 || control_at(s + i, len)) {
            w += (size_t)snprintf(out + w, K8S_QUOTE_CAP - w, len == 2 ? "\\u%04x" : "\\x%02x",
                                  len == 2 ? s[i + 1] : s[i]);
        } else {
            memcpy(out + w, s + i, len);
            w += len;
        }
        i += len ? len : 1;
    }
    out[w] = '\0';
    if (i < n)
        snprintf(out + w, K8S_QUOTE_CAP - w, "... (%zu bytes)", n);
    return out;
}

int k8s_error_set(struct k8s_error *reterr, int err, const char *fmt, ...)
{
    if (!reterr)
        return err;
    *reterr = (struct k8s_error){.err = err};
    if (!strchr(fmt, '%')) { /* a plain message: no printf on the paths that set one per request */
        size_t n = strnlen(fmt, sizeof(reterr->message) - 1);
        memcpy(reterr->message, fmt, n);
        reterr->message[n] = '\0';
        return err;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reterr->message, sizeof(reterr->message), fmt, ap);
    va_end(ap);
    one_clean_line(reterr->message);
    return err;
}

void k8s_error_prefix(struct k8s_error *reterr, const char *fmt, ...)
{
    if (!reterr)
        return;
    char prefix[256], old[sizeof(reterr->message)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, reterr->message, sizeof(old));
    size_t n = strlen(prefix);
    if (n > sizeof(reterr->message) - 3)
        n = sizeof(reterr->message) - 3;
    memcpy(reterr->message, prefix, n);
    memcpy(reterr->message + n, ": ", 2);
    size_t room = sizeof(reterr->message) - n - 3;
    size_t m = strnlen(old, room);
    memcpy(reterr->message + n + 2, old, m);
    reterr->message[n + 2 + m] = '\0';
    one_clean_line(reterr->message);
}

bool k8s_err_is_transient(int err)
{
    switch (err < 0 ? -err : err) {
    case K8S_EIO:
    case K8S_ETIMEDOUT:
    case K8S_ETHROTTLED:
    case K8S_ESERVER:
    case K8S_ECONFLICT:
        return true;
    default:
        return false;
    }
}
