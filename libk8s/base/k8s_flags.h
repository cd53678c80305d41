/*
 * k8s_flags — command-line flags with Go's flag-package syntax, as the
 * Helm charts pass them: "--name=value", "--name value", "-name", bare
 * booleans ("--leader-elect", "--x=false"), "--" ends the flags. Unknown
 * flags are an error that names the flag.
 *
 * A flag is declared once, as a row of a static table (an array ended by
 * an entry with name == NULL): its name, type, the offset of the variable
 * it sets in a settings struct (K8S_FLAG_AT), help and range. The same
 * rows give parsing (k8s_flags_parse), the help text with each default
 * printed from the settings struct as initialised (k8s_flags_usage, Go's
 * PrintDefaults rule: zero values print none) and the effective settings
 * as JSON (k8s_flags_json, for --dry-run and the start-up log line).
 * String flags store a pointer into argv (borrowed for the life of argv).
 *
 * Thread-safety: none needed (called from main before threads start).
 */
#ifndef K8S_FLAGS_H
#define K8S_FLAGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "k8s_err.h"
#include "k8s_time.h"

enum k8s_flag_type {
    K8S_FLAG_BOOL,     /* bool * */
    K8S_FLAG_STRING,   /* const char ** */
    K8S_FLAG_INT,      /* int64_t *, decimal */
    K8S_FLAG_DURATION, /* int64_t * nanoseconds, Go syntax ("5m", "1h30m") */
    K8S_FLAG_BYTES,    /* int64_t *, "8388608", "8Mi", "64Ki", "1G" */
};

enum k8s_flag_opts {
    K8S_FLAG_NO_JSON = 1,    /* left out of k8s_flags_json (e.g. --dry-run itself) */
    K8S_FLAG_NO_DEFAULT = 2, /* usage prints no default (its initial value means "not
                                given"; the help says what then happens) */
};

struct k8s_flag {
    const char *name; /* without dashes */
    enum k8s_flag_type type;
    size_t offset; /* of the variable it sets, in the settings struct */
    const char *help;
    int64_t min, max; /* inclusive range for INT/DURATION/BYTES when min < max */
    unsigned opts;    /* enum k8s_flag_opts */
};

/* The offset field of a row: K8S_FLAG_AT(struct op_config, workers). */
#define K8S_FLAG_AT(type, member) offsetof(type, member)

/* The rows both `selftest` commands (the charts' helm tests) share, to
 * place inside their tables: --timeout and --interval of the retry loop
 * (int64_t nanoseconds) and --kubeconfig (const char *), at the members
 * named of the settings struct type. */
// clang-format off
#define K8S_FLAG_ROWS_SELFTEST(type, timeout, interval, kubeconfig)                                \
    {"timeout", K8S_FLAG_DURATION, K8S_FLAG_AT(type, timeout),                                     \
     "keep trying this long while the install settles (0: once)", 0, 3600 * K8S_NSEC_PER_SEC},     \
    {"interval", K8S_FLAG_DURATION, K8S_FLAG_AT(type, interval), "between attempts",               \
     K8S_NSEC_PER_MSEC, 600 * K8S_NSEC_PER_SEC},                                                   \
    {"kubeconfig", K8S_FLAG_STRING, K8S_FLAG_AT(type, kubeconfig),                                 \
     "kubeconfig for out-of-cluster use (empty: the in-cluster service account)"}
// clang-format on

/* Rows in a table (its terminator not counted). */
size_t k8s_flags_count(const struct k8s_flag *flags);

/* Parse argv[*argi..argc) against flags into the struct at settings,
 * stopping at the first positional argument or after "--". On return
 * *argi is the index of the first positional argument. Returns 0, 1 when
 * -h/--help was given, or -K8S_EINVAL with reterr naming the flag and the
 * problem (the variables of the flags before it are set). */
int k8s_flags_parse(const struct k8s_flag *flags, void *settings, int argc, char **argv, int *argi,
                    struct k8s_error *reterr) K8S_MUST_CHECK;

/* A subcommand's flags: parse argv[argi..argc) into settings as
 * k8s_flags_parse does; on -h/--help print usage_head, then the flags with
 * the defaults read from defaults, and return 1; a positional argument is
 * -K8S_EINVAL naming it. */
int k8s_flags_command(const struct k8s_flag *flags, void *settings, const void *defaults,
                      const char *usage_head, int argc, char **argv, int argi,
                      struct k8s_error *reterr) K8S_MUST_CHECK;

/* Print a "  --name type   help (default D)" line per row, D read from
 * defaults (the settings struct as initialised). */
void k8s_flags_usage(FILE *out, const struct k8s_flag *flags, const void *defaults);

/* {"name": value, ...} in table order: booleans, strings, integers, Go
 * durations ("5m0s"), byte sizes as integers. New reference; NULL when out
 * of memory. */
json_t *k8s_flags_json(const struct k8s_flag *flags, const void *settings);

/* Parse a byte size ("8Mi", "64Ki", "1G", "1024"). -K8S_EINVAL when bad. */
int k8s_bytes_parse(const char *s, int64_t *ret) K8S_MUST_CHECK;

#endif
