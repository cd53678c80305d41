/*
 * k8s_time — clocks, RFC 3339 timestamps and Go duration syntax.
 *
 * Thread-safety: all functions are reentrant.
 */
#ifndef K8S_TIME_H
#define K8S_TIME_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "k8s_err.h"

#define K8S_NSEC_PER_SEC  1000000000LL
#define K8S_NSEC_PER_MSEC 1000000LL

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t k8s_mono_ns(void);
/* CLOCK_REALTIME in nanoseconds. */
int64_t k8s_real_ns(void);

/* Initialise *cond to time its waits on CLOCK_MONOTONIC, so that
 * pthread_cond_timedwait deadlines (from k8s_mono_ns) ignore wall-clock
 * steps. Destroy it with pthread_cond_destroy. */
void k8s_cond_init_mono(pthread_cond_t *cond);

/* Format t as "YYYY-MM-DDTHH:MM:SSZ" (UTC) into out (>= 21 bytes). */
void k8s_time_rfc3339(time_t t, char out[static 21]);

/* Format unix_ns as a Kubernetes MicroTime, "YYYY-MM-DDTHH:MM:SS.uuuuuuZ"
 * (UTC, exactly six fractional digits), into out (>= 28 bytes). */
void k8s_time_rfc3339_micro(int64_t unix_ns, char out[static 28]);

/* Format ns the way Go's time.Duration.String does ("1h5m0s", "1.5s",
 * "300ms", "0s") into out (>= 32 bytes). */
void k8s_duration_format(int64_t ns, char out[static 32]);

/* Parse an RFC 3339 timestamp (offsets and fractions allowed) to UTC
 * seconds. -K8S_EPARSE when malformed; *ret untouched on failure. */
int k8s_time_parse_rfc3339(const char *s, time_t *ret) K8S_MUST_CHECK;

/* Parse a Go time.Duration string ("300ms", "1h30m", "-1.5h", "0") into
 * nanoseconds. -K8S_EINVAL (with a message naming the input) when
 * malformed or out of range; *ret_ns untouched on failure. */
int k8s_duration_parse(const char *s, int64_t *ret_ns, struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
