/*
 * k8s_flags — command-line flags with Go's flag-package syntax, as the
 * Helm charts pass them: "--name=value", "--name value", "-name", bare
 * booleans ("--leader-elect", "--x=false"), "--" ends the flags. Unknown
 * flags are an error that names the flag.
 *
 * A flag table is an array terminated by an entry with name == NULL. Each
 * entry points at the variable it sets; string flags store a pointer into
 * argv (borrowed for the life of argv).
 *
 * Thread-safety: none needed (called from main before threads start).
 */
#ifndef K8S_FLAGS_H
#define K8S_FLAGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "k8s_err.h"

enum k8s_flag_type {
    K8S_FLAG_BOOL,     /* bool * */
    K8S_FLAG_STRING,   /* const char ** */
    K8S_FLAG_INT,      /* int64_t *, decimal */
    K8S_FLAG_DURATION, /* int64_t * nanoseconds, Go syntax ("5m", "1h30m") */
    K8S_FLAG_BYTES,    /* int64_t *, "8388608", "8Mi", "64Ki", "1G" */
};

struct k8s_flag {
    const char *name; /* without dashes */
    enum k8s_flag_type type;
    void *target;
    const char *help;
    int64_t min, max; /* inclusive range for INT/DURATION/BYTES when min < max */
};

/* Parse argv[*argi..argc) against flags, stopping at the first positional
 * argument or after "--". On return *argi is the index of the first
 * positional argument. Returns 0, 1 when -h/--help was given, or
 * -K8S_EINVAL with reterr naming the flag and the problem. */
int k8s_flags_parse(const struct k8s_flag *flags, int argc, char **argv, int *argi,
                    struct k8s_error *reterr) K8S_MUST_CHECK;

/* Print "  --name  help" lines. */
void k8s_flags_usage(FILE *out, const struct k8s_flag *flags);

/* Parse a byte size ("8Mi", "64Ki", "1G", "1024"). -K8S_EINVAL when bad. */
int k8s_bytes_parse(const char *s, int64_t *ret) K8S_MUST_CHECK;

#endif
