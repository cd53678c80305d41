/*
 * wh_warn — admission warnings: a JSON array of short strings returned to
 * the client as Warning headers. Bounded: at most WH_WARN_MAX entries of at
 * most WH_WARN_LEN bytes (the API server truncates beyond 4 KiB in total),
 * duplicates dropped. A NULL array is accepted and ignored.
 *
 * A message cut to fit ends in "..." (on a UTF-8 boundary).
 *
 * Thread-safety: an array belongs to one admission.
 */
#ifndef WH_WARN_H
#define WH_WARN_H

#include <jansson.h>

#include "k8s_err.h"

#define WH_WARN_MAX 16
#define WH_WARN_LEN 240

void wh_warnf(json_t *warnings, const char *fmt, ...) K8S_PRINTF(2, 3);
/* The same for the NULL-ended strings that follow, one after the other:
 * wh_warnf(w, "%s%s", a, b) as wh_warn_cat(w, a, b, NULL), without
 * printf's cost. */
void wh_warn_cat(json_t *warnings, ...) __attribute__((sentinel));

#endif
