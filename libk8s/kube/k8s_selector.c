#include "k8s_selector.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int say(char *why, size_t cap, int ret, const char *fmt, ...) K8S_PRINTF(4, 5);

static int say(char *why, size_t cap, int ret, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return ret;
}

/* values as "[a, b]" into out. */
static void list_text(const json_t *values, char *out, size_t cap)
{
    size_t i, n = 0;
    const json_t *v;
    n += (size_t)snprintf(out, cap, "[");
    json_array_foreach(values, i, v)
    {
        if (n < cap)
            n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? ", " : "", json_string_value(v));
    }
    if (n < cap)
        snprintf(out + n, cap - n, "]");
}

static bool in_values(const json_t *values, const char *value)
{
    size_t i;
    const json_t *v;
    json_array_foreach(values, i, v) if (json_is_string(v) &&
                                         !strcmp(json_string_value(v), value)) return true;
    return false;
}

/* The label as "key=value" or "no label key" for messages. */
static void label_text(const char *key, const char *value, char *out, size_t cap)
{
    if (value)
        snprintf(out, cap, "label %s=%s", key, value);
    else
        snprintf(out, cap, "no label %s", key);
}

static int check_shape(const char *key, const char *op, const json_t *values, char *why, size_t cap)
{
    bool set_op = !strcmp(op, "In") || !strcmp(op, "NotIn");
    bool exists_op = !strcmp(op, "Exists") || !strcmp(op, "DoesNotExist");
    size_t n = json_is_array(values) ? json_array_size(values) : 0;
    if (!set_op && !exists_op)
        return say(why, cap, -K8S_EINVAL, "matchExpressions %s: unknown operator %s", key, op);
    if (values && !json_is_null(values) && !json_is_array(values))
        return say(why, cap, -K8S_EINVAL, "matchExpressions %s: values is not a list", key);
    if (set_op && n == 0)
        return say(why, cap, -K8S_EINVAL, "matchExpressions %s %s: values must not be empty", key,
                   op);
    if (exists_op && n > 0)
        return say(why, cap, -K8S_EINVAL, "matchExpressions %s %s: values must be empty", key, op);
    return 0;
}

static int expression(const json_t *e, const json_t *labels, char *why, size_t cap)
{
    const char *key = json_string_value(json_object_get(e, "key"));
    const char *op = json_string_value(json_object_get(e, "operator"));
    const json_t *values = json_object_get(e, "values");
    if (!key || !op)
        return say(why, cap, -K8S_EINVAL, "matchExpressions entry without key or operator");
    int r = check_shape(key, op, values, why, cap);
    if (r < 0)
        return r;
    const char *value = json_string_value(json_object_get(labels, key));
    bool ok = !strcmp(op, "In")       ? value && in_values(values, value)
              : !strcmp(op, "NotIn")  ? !value || !in_values(values, value)
              : !strcmp(op, "Exists") ? value != NULL
                                      : value == NULL;
    if (ok)
        return 1;
    char have[320], want[320] = "";
    label_text(key, value, have, sizeof(have));
    if (json_array_size(values))
        list_text(values, want, sizeof(want));
    return say(why, cap, 0, "%s fails %s %s%s%s", have, key, op, *want ? " " : "", want);
}

static int match_labels(const json_t *want, const json_t *labels, char *why, size_t cap)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)want, key, v)
    {
        const char *value = json_string_value(json_object_get(labels, key));
        if (!json_is_string(v))
            return say(why, cap, -K8S_EINVAL, "matchLabels %s: value is not a string", key);
        if (!value || strcmp(value, json_string_value(v))) {
            char have[320];
            label_text(key, value, have, sizeof(have));
            return say(why, cap, 0, "%s fails matchLabels %s=%s", have, key, json_string_value(v));
        }
    }
    return 1;
}

int k8s_selector_match(const json_t *selector, const json_t *labels, char *why, size_t why_cap)
{
    if (!selector || json_is_null(selector))
        return 1;
    if (!json_is_object(selector))
        return say(why, why_cap, -K8S_EINVAL, "the selector is not an object");
    const json_t *ml = json_object_get(selector, "matchLabels");
    const json_t *me = json_object_get(selector, "matchExpressions");
    if ((ml && !json_is_null(ml) && !json_is_object(ml)) ||
        (me && !json_is_null(me) && !json_is_array(me)))
        return say(why, why_cap, -K8S_EINVAL, "matchLabels must be a map, matchExpressions a list");
    int r = json_is_object(ml) ? match_labels(ml, labels, why, why_cap) : 1;
    size_t i;
    const json_t *e;
    json_array_foreach(me, i, e)
    {
        if (r != 1)
            break;
        r = expression(e, labels, why, why_cap);
    }
    return r;
}
