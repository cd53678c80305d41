/* k8s_log: one JSON line per call, with one write(2); ts, level and msg
 * first, then the fields in order, strings escaped, integers exact, long
 * lines whole; levels filter. Lines are read back from a pipe. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s_log.h"
#include "test_support.h"

static int fds[2];

static void setup(void)
{
    cr_assert_eq(pipe(fds), 0);
    cr_assert_eq(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    cr_assert_eq(fcntl(fds[1], F_SETPIPE_SZ, 1 << 20) > 0, 1);
    k8s_log_set_fd(fds[1]);
    k8s_log_set_level(K8S_LOG_INFO);
}

static void teardown(void)
{
    k8s_log_set_fd(2);
    close(fds[0]);
    close(fds[1]);
}

TestSuite(k8s_log, .init = setup, .fini = teardown);

/* Everything written so far (new string; "" when nothing). */
static char *drain(void)
{
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    cr_assert_not_null(buf);
    ssize_t got;
    while (n < cap && (got = read(fds[0], buf + n, cap - n)) > 0)
        n += (size_t)got;
    buf[n] = '\0';
    return buf;
}

/* The one line written, parsed; its text in *text (new). */
static json_t *one_line(char **text)
{
    char *s = drain();
    size_t n = strlen(s);
    cr_assert(n > 0 && s[n - 1] == '\n', "a whole line: %s", s);
    cr_assert_null(memchr(s, '\n', n - 1), "exactly one line: %s", s);
    json_error_t e;
    json_t *v = json_loadb(s, n, 0, &e);
    cr_assert_not_null(v, "not JSON (%s): %s", e.text, s);
    *text = s;
    return v;
}

Test(k8s_log, fields_in_order_escaped_and_exact)
{
    const char *odd = "q\"b\\s/\n\t\x01 é ✓";
    const struct k8s_log_field f[] = {
        {"uid", "u-1"},
        {"odd", odd},
        {"zero", NULL, 0},
        {"neg", NULL, -5},
        {"min", NULL, LLONG_MIN},
        {"max", NULL, LLONG_MAX},
        {"empty", ""},
    };
    k8s_log_fields(K8S_LOG_INFO, "admission \"x\"", f, sizeof(f) / sizeof(f[0]));
    char *text;
    json_t *v = one_line(&text);
    cr_expect_str_eq(json_string_value(json_object_get(v, "level")), "info");
    cr_expect_str_eq(json_string_value(json_object_get(v, "msg")), "admission \"x\"");
    const char *ts = json_string_value(json_object_get(v, "ts"));
    cr_assert_not_null(ts);
    cr_expect_eq(strlen(ts), 27, "YYYY-MM-DDTHH:MM:SS.uuuuuuZ: %s", ts);
    cr_expect_eq(ts[26], 'Z');
    cr_expect_str_eq(json_string_value(json_object_get(v, "uid")), "u-1");
    cr_expect_str_eq(json_string_value(json_object_get(v, "odd")), odd);
    cr_expect_eq(json_integer_value(json_object_get(v, "zero")), 0);
    cr_expect_eq(json_integer_value(json_object_get(v, "neg")), -5);
    cr_expect_eq(json_integer_value(json_object_get(v, "min")), LLONG_MIN);
    cr_expect_eq(json_integer_value(json_object_get(v, "max")), LLONG_MAX);
    cr_expect_str_eq(json_string_value(json_object_get(v, "empty")), "");
    const char *keys[] = {"\"ts\"",   "\"level\"", "\"msg\"", "\"uid\"", "\"odd\"",
                          "\"zero\"", "\"neg\"",   "\"min\"", "\"max\"", "\"empty\""};
    const char *at = text;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *k = strstr(at, keys[i]);
        cr_expect_not_null(k, "%s in order in %s", keys[i], text);
        at = k ? k : at;
    }
    json_decref(v);
    free(text);
}

/* A line past the stack's room is written whole all the same. */
Test(k8s_log, long_values_whole)
{
    size_t n = 100000;
    char *big = malloc(n + 1);
    cr_assert_not_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = i % 97 == 0 ? '"' : (char)('a' + i % 26);
    big[n] = '\0';
    const struct k8s_log_field f[] = {{"big", big}, {"after", "x"}};
    k8s_log_fields(K8S_LOG_WARN, "m", f, 2);
    char *text;
    json_t *v = one_line(&text);
    cr_expect_str_eq(json_string_value(json_object_get(v, "big")), big);
    cr_expect_str_eq(json_string_value(json_object_get(v, "after")), "x");
    cr_expect_str_eq(json_string_value(json_object_get(v, "level")), "warn");
    json_decref(v);
    free(text);
    free(big);
}

Test(k8s_log, levels_filter)
{
    const struct k8s_log_field f[] = {{"a", "b"}};
    k8s_log_fields(K8S_LOG_DEBUG, "hidden", f, 1);
    k8s_log_json(K8S_LOG_DEBUG, "hidden", json_pack("{s:i}", "n", 1));
    k8s_logf(K8S_LOG_TRACE, "hidden %d", 1);
    char *s = drain();
    cr_expect_str_eq(s, "");
    free(s);
    k8s_log_set_level(K8S_LOG_DEBUG);
    k8s_log_fields(K8S_LOG_DEBUG, "shown", f, 1);
    char *text;
    json_t *v = one_line(&text);
    cr_expect_str_eq(json_string_value(json_object_get(v, "level")), "debug");
    json_decref(v);
    free(text);
}

/* Fields past K8S_LOG_FIELDS_MAX are dropped; the line stays valid. */
Test(k8s_log, fields_past_the_cap_dropped)
{
    struct k8s_log_field f[K8S_LOG_FIELDS_MAX + 3];
    char keys[K8S_LOG_FIELDS_MAX + 3][8];
    for (size_t i = 0; i < K8S_LOG_FIELDS_MAX + 3; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
        f[i] = (struct k8s_log_field){keys[i], NULL, (long long)i};
    }
    k8s_log_fields(K8S_LOG_INFO, NULL, f, K8S_LOG_FIELDS_MAX + 3);
    char *text;
    json_t *v = one_line(&text);
    cr_expect_str_eq(json_string_value(json_object_get(v, "msg")), "");
    cr_expect_eq(json_object_size(v), 3 + K8S_LOG_FIELDS_MAX);
    cr_expect_eq(json_integer_value(json_object_get(v, "k31")), 31);
    cr_expect_null(json_object_get(v, "k32"));
    json_decref(v);
    free(text);
}

Test(k8s_log, json_fields_and_printf)
{
    k8s_log_json(K8S_LOG_ERROR, "boom", json_pack("{s:s, s:I}", "why", "x\"y", "n", (json_int_t)7));
    char *text;
    json_t *v = one_line(&text);
    cr_expect_str_eq(json_string_value(json_object_get(v, "level")), "error");
    cr_expect_str_eq(json_string_value(json_object_get(v, "why")), "x\"y");
    cr_expect_eq(json_integer_value(json_object_get(v, "n")), 7);
    json_decref(v);
    free(text);
    k8s_logf(K8S_LOG_INFO, "n=%d", 42);
    v = one_line(&text);
    cr_expect_str_eq(json_string_value(json_object_get(v, "msg")), "n=42");
    json_decref(v);
    free(text);
}

/* ---------- buffered per-request lines ---------- */

/* Everything written within about `ms` (polls; returns once something came). */
static char *drain_within(int ms)
{
    for (int i = 0; i < ms; i++) {
        char *s = drain();
        if (*s)
            return s;
        free(s);
        usleep(1000);
    }
    return drain();
}

/* Gathered lines wait for the flush; any other line writes them out first,
 * so the order holds; unbuffering writes out the rest. */
Test(k8s_log, buffered_lines_in_order)
{
    cr_assert_eq(k8s_log_buffer(3600 * (int64_t)1000000000), 0); /* no timer flush here */
    const struct k8s_log_field f1[] = {{"n", NULL, 1}}, f2[] = {{"n", NULL, 2}};
    k8s_log_fields(K8S_LOG_INFO, "req", f1, 1);
    k8s_log_fields(K8S_LOG_INFO, "req", f2, 1);
    char *s = drain();
    cr_expect_str_eq(s, "", "gathered, not yet written");
    free(s);
    k8s_log_fields(K8S_LOG_WARN, "warned", f1, 1); /* not gathered */
    s = drain();
    const char *a = strstr(s, "\"n\":1}"), *b = strstr(s, "\"n\":2}"), *w = strstr(s, "warned");
    cr_expect(a && b && w && a < b && b < w, "in order: %s", s);
    free(s);
    k8s_log_fields(K8S_LOG_INFO, "last", f1, 1);
    k8s_log_unbuffer();
    s = drain();
    cr_expect_not_null(strstr(s, "\"last\""), "unbuffer writes out the rest: %s", s);
    free(s);
    k8s_log_fields(K8S_LOG_INFO, "direct", f1, 1);
    s = drain();
    cr_expect_not_null(strstr(s, "direct"), "written at once again");
    free(s);
    k8s_log_unbuffer(); /* twice is harmless */
}

/* A full buffer is written without waiting for the timer, lines whole. */
Test(k8s_log, buffered_full_buffer_written)
{
    cr_assert_eq(k8s_log_buffer(3600 * (int64_t)1000000000), 0);
    char val[200];
    memset(val, 'v', sizeof(val) - 1);
    val[sizeof(val) - 1] = '\0';
    const struct k8s_log_field f[] = {{"v", val}};
    for (int i = 0; i < 1000; i++) /* ~270 KB */
        k8s_log_fields(K8S_LOG_INFO, "req", f, 1);
    char *s = drain();
    size_t n = strlen(s), lines = 0;
    cr_expect_gt(n, 64 * 1024 - 300, "written as the buffer filled");
    cr_assert(n > 0 && s[n - 1] == '\n', "whole lines only");
    for (char *p = s; (p = strchr(p, '\n')); p++)
        lines++;
    free(s);
    k8s_log_unbuffer();
    s = drain();
    for (char *p = s; (p = strchr(p, '\n')); p++)
        lines++;
    cr_expect_eq(lines, 1000, "every line, once");
    free(s);
}

/* The thread writes gathered lines out at the interval. */
Test(k8s_log, buffered_timer_flush)
{
    cr_assert_eq(k8s_log_buffer(10 * 1000 * 1000), 0);
    cr_expect_eq(k8s_log_buffer(10 * 1000 * 1000), 0, "already on");
    const struct k8s_log_field f[] = {{"n", NULL, 5}};
    k8s_log_fields(K8S_LOG_INFO, "tick", f, 1);
    char *s = drain_within(5000);
    cr_expect_not_null(strstr(s, "\"tick\""), "written by the thread: %s", s);
    free(s);
    k8s_log_unbuffer();
    cr_expect_eq(k8s_log_buffer(0), -K8S_EINVAL);
}
