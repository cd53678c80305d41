/*
 * md_capture — the MLDiagnosticsConnection `kubectl mldiag capture`
 * creates, built from its flags (pure: no I/O, no clock; the caller gives
 * the time that names it).
 *
 * Thread-safety: reentrant. Ownership: the struct borrows its strings
 * (argv); md_capture_build returns a new reference.
 */
#ifndef MD_CAPTURE_H
#define MD_CAPTURE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"
#include "md_target.h"

#define MD_UNSET (-1) /* an integer option not given */

struct md_capture {
    struct md_target target;
    const char *namespace; /* of the resource and its pods */
    const char *name;      /* NULL: <workload or first pod>-<unix seconds> */
    int64_t duration_ns;
    int64_t port;
    const char *storage;
    /* hosts (a workload only) */
    const char *indices, *replicated_jobs, *selector; /* NULL: not given */
    int64_t max;                                      /* MD_UNSET: not given */
    /* options */
    int64_t host_level, device_level, python_level, delay_ns; /* MD_UNSET: not given */
};

/* The resource for c, named for now_s when c->name is NULL. -K8S_EINVAL
 * with reterr naming the flag (a duration that is not whole seconds,
 * --hosts on pods, a selector that is not k=v[,k=v]); -K8S_ENOMEM. */
int md_capture_build(const struct md_capture *c, int64_t now_s, json_t **ret,
                     struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
