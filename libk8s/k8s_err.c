#include "k8s_err.h"

#include <stdarg.h>
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
