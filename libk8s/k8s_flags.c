#include "k8s_flags.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"

static const struct k8s_flag *find(const struct k8s_flag *flags, const char *name, size_t n)
{
    for (const struct k8s_flag *f = flags; f->name; f++)
        if (strlen(f->name) == n && !strncmp(f->name, name, n))
            return f;
    return NULL;
}

static int parse_bool(const char *v, bool *ret)
{
    static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
    for (size_t i = 0; i < 6; i++) {
        if (!strcmp(v, yes[i])) {
            *ret = true;
            return 0;
        }
        if (!strcmp(v, no[i])) {
            *ret = false;
            return 0;
        }
    }
    return -K8S_EINVAL;
}

static int parse_int(const char *v, int64_t *ret)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno)
        return -K8S_EINVAL;
    *ret = x;
    return 0;
}

int k8s_bytes_parse(const char *s, int64_t *ret)
{
    static const struct {
        const char *suffix;
        int64_t mult;
    } sfx[] = {{"Ki", 1LL << 10}, {"Mi", 1LL << 20}, {"Gi", 1LL << 30}, {"K", 1000},
               {"k", 1000},       {"M", 1000000},    {"G", 1000000000}, {"", 1}};
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*s))
        return -K8S_EINVAL;
    long long x = strtoll(s, &end, 10);
    if (end == s || errno || x < 0)
        return -K8S_EINVAL;
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
        if (!strcmp(end, sfx[i].suffix)) {
            if (x > INT64_MAX / sfx[i].mult)
                return -K8S_EINVAL;
            *ret = x * sfx[i].mult;
            return 0;
        }
    return -K8S_EINVAL;
}

static int set_value(const struct k8s_flag *f, const char *v, struct k8s_error *reterr)
{
    int64_t x = 0;
    int r = 0;
    struct k8s_error derr;
    switch (f->type) {
    case K8S_FLAG_BOOL:
        r = parse_bool(v, (bool *)f->target);
        break;
    case K8S_FLAG_STRING:
        *(const char **)f->target = v;
        return 0;
    case K8S_FLAG_INT:
        r = parse_int(v, &x);
        break;
    case K8S_FLAG_DURATION:
        r = k8s_duration_parse(v, &x, &derr);
        break;
    case K8S_FLAG_BYTES:
        r = k8s_bytes_parse(v, &x);
        break;
    }
    if (r < 0)
        return k8s_error_set(reterr, -K8S_EINVAL, "invalid value \"%s\" for flag --%s", v, f->name);
    if (f->min < f->max && (x < f->min || x > f->max))
        return k8s_error_set(reterr, -K8S_EINVAL, "value \"%s\" for flag --%s is out of range", v,
                             f->name);
    if (f->type != K8S_FLAG_BOOL)
        *(int64_t *)f->target = x;
    return 0;
}

/* One "-name[=value]" argument at argv[*argi]; may consume the next. */
static int parse_one(const struct k8s_flag *flags, int argc, char **argv, int *argi,
                     struct k8s_error *reterr)
{
    const char *arg = argv[*argi] + 1;
    if (*arg == '-')
        arg++;
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    if (n == 0 || arg[0] == '-' || arg[0] == '=')
        return k8s_error_set(reterr, -K8S_EINVAL, "bad flag syntax: %s", argv[*argi]);
    if ((n == 1 && arg[0] == 'h') || (n == 4 && !strncmp(arg, "help", 4)))
        return 1;
    const struct k8s_flag *f = find(flags, arg, n);
    if (!f)
        return k8s_error_set(reterr, -K8S_EINVAL, "unknown flag: --%.*s", (int)n, arg);
    (*argi)++;
    if (eq)
        return set_value(f, eq + 1, reterr);
    if (f->type == K8S_FLAG_BOOL)
        return set_value(f, "true", reterr);
    if (*argi >= argc)
        return k8s_error_set(reterr, -K8S_EINVAL, "flag needs an argument: --%s", f->name);
    return set_value(f, argv[(*argi)++], reterr);
}

int k8s_flags_parse(const struct k8s_flag *flags, int argc, char **argv, int *argi,
                    struct k8s_error *reterr)
{
    while (*argi < argc) {
        const char *a = argv[*argi];
        if (!strcmp(a, "--")) {
            (*argi)++;
            return 0;
        }
        if (a[0] != '-' || a[1] == '\0')
            return 0; /* first positional argument */
        int r = parse_one(flags, argc, argv, argi, reterr);
        if (r != 0)
            return r;
    }
    return 0;
}

void k8s_flags_usage(FILE *out, const struct k8s_flag *flags)
{
    static const char *const kinds[] = {"", " string", " int", " duration", " bytes"};
    for (const struct k8s_flag *f = flags; f->name; f++) {
        char left[64];
        snprintf(left, sizeof(left), "%s%s%s", strlen(f->name) == 1 ? "-" : "--", f->name,
                 kinds[f->type]);
        fprintf(out, "  %-34s %s\n", left, f->help);
    }
}
