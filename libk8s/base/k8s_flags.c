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

size_t k8s_flags_count(const struct k8s_flag *flags)
{
    size_t n = 0;
    while (flags[n].name)
        n++;
    return n;
}

static void *var(const struct k8s_flag *f, void *settings)
{
    return (char *)settings + f->offset;
}

static const void *cvar(const struct k8s_flag *f, const void *settings)
{
    return (const char *)settings + f->offset;
}

static int set_value(const struct k8s_flag *f, void *settings, const char *v,
                     struct k8s_error *reterr)
{
    int64_t x = 0;
    int r = 0;
    struct k8s_error derr;
    switch (f->type) {
    case K8S_FLAG_BOOL:
        r = parse_bool(v, (bool *)var(f, settings));
        break;
    case K8S_FLAG_STRING:
        *(const char **)var(f, settings) = v;
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
        *(int64_t *)var(f, settings) = x;
    return 0;
}

/* One "-name[=value]" argument at argv[*argi]; may consume the next. */
static int parse_one(const struct k8s_flag *flags, void *settings, int argc, char **argv, int *argi,
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
        return set_value(f, settings, eq + 1, reterr);
    if (f->type == K8S_FLAG_BOOL)
        return set_value(f, settings, "true", reterr);
    if (*argi >= argc)
        return k8s_error_set(reterr, -K8S_EINVAL, "flag needs an argument: --%s", f->name);
    return set_value(f, settings, argv[(*argi)++], reterr);
}

int k8s_flags_parse(const struct k8s_flag *flags, void *settings, int argc, char **argv, int *argi,
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
        int r = parse_one(flags, settings, argc, argv, argi, reterr);
        if (r != 0)
            return r;
    }
    return 0;
}

int k8s_flags_command(const struct k8s_flag *flags, void *settings, const void *defaults,
                      const char *usage_head, int argc, char **argv, int argi,
                      struct k8s_error *reterr)
{
    int r = k8s_flags_parse(flags, settings, argc, argv, &argi, reterr);
    if (r == 1) {
        fputs(usage_head, stdout);
        k8s_flags_usage(stdout, flags, defaults);
        return 1;
    }
    if (r == 0 && argi < argc)
        return k8s_error_set(reterr, -K8S_EINVAL, "unexpected argument: %s", argv[argi]);
    return r;
}

/* A byte size in the largest binary unit that divides it ("8Mi"). */
static void bytes_format(int64_t v, char out[static 32])
{
    static const char *const unit[] = {"", "Ki", "Mi", "Gi"};
    size_t u = 0;
    while (u + 1 < sizeof(unit) / sizeof(unit[0]) && v && v % 1024 == 0)
        v /= 1024, u++;
    snprintf(out, 32, "%lld%s", (long long)v, unit[u]);
}

/* The value as text into out; false for the zero value (none printed). */
static bool value_text(const struct k8s_flag *f, const void *settings, char out[static 32],
                       const char **str)
{
    const void *p = cvar(f, settings);
    int64_t x = f->type == K8S_FLAG_BOOL || f->type == K8S_FLAG_STRING ? 0 : *(const int64_t *)p;
    *str = out;
    switch (f->type) {
    case K8S_FLAG_BOOL:
        snprintf(out, 32, "true");
        return *(const bool *)p;
    case K8S_FLAG_STRING:
        *str = *(const char *const *)p;
        return *str && **str;
    case K8S_FLAG_INT:
        snprintf(out, 32, "%lld", (long long)x);
        break;
    case K8S_FLAG_DURATION:
        k8s_duration_format(x, out);
        break;
    case K8S_FLAG_BYTES:
        bytes_format(x, out);
        break;
    }
    return x != 0;
}

void k8s_flags_usage(FILE *out, const struct k8s_flag *flags, const void *defaults)
{
    static const char *const kinds[] = {"", " string", " int", " duration", " bytes"};
    for (const struct k8s_flag *f = flags; f->name; f++) {
        char left[64], buf[32];
        const char *d;
        snprintf(left, sizeof(left), "%s%s%s", strlen(f->name) == 1 ? "-" : "--", f->name,
                 kinds[f->type]);
        if (!(f->opts & K8S_FLAG_NO_DEFAULT) && value_text(f, defaults, buf, &d))
            fprintf(out, "  %-34s %s (default %s)\n", left, f->help, d);
        else
            fprintf(out, "  %-34s %s\n", left, f->help);
    }
}

static json_t *value_json(const struct k8s_flag *f, const void *settings)
{
    const void *p = cvar(f, settings);
    char buf[32];
    switch (f->type) {
    case K8S_FLAG_BOOL:
        return json_boolean(*(const bool *)p);
    case K8S_FLAG_STRING: {
        const char *s = *(const char *const *)p;
        json_t *j = json_string(s ? s : "");
        return j ? j : json_string("(not UTF-8)");
    }
    case K8S_FLAG_DURATION:
        k8s_duration_format(*(const int64_t *)p, buf);
        return json_string(buf);
    case K8S_FLAG_INT:
    case K8S_FLAG_BYTES:
        break;
    }
    return json_integer(*(const int64_t *)p);
}

json_t *k8s_flags_json(const struct k8s_flag *flags, const void *settings)
{
    json_t *o = json_object();
    for (const struct k8s_flag *f = flags; o && f->name; f++) {
        if (f->opts & K8S_FLAG_NO_JSON)
            continue;
        if (json_object_set_new(o, f->name, value_json(f, settings)) < 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}
