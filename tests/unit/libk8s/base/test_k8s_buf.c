/* k8s_buf: growable capped buffer (curl dynbuf rules) and k8s_read_file. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s_buf.h"
#include "test_support.h"

Test(k8s_buf, empty_after_init)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 16);
    cr_expect_null(b.data);
    cr_expect_eq(b.len, 0);
    cr_expect_eq(b.max, 16);
    cr_expect_str_eq(k8s_buf_str(&b), "");
    k8s_buf_done(&b);
    k8s_buf_done(NULL); /* NULL-safe */
}

Test(k8s_buf, append_keeps_nul_terminator)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1024);
    cr_assert_eq(k8s_buf_append(&b, "abc", 3), 0);
    cr_assert_eq(k8s_buf_appends(&b, "def"), 0);
    cr_assert_eq(k8s_buf_append(&b, "", 0), 0);
    cr_assert_eq(k8s_buf_append(&b, "g\0h", 3), 0);
    cr_expect_eq(b.len, 9);
    cr_expect_eq(memcmp(b.data, "abcdefg\0h", 10), 0);
    cr_expect_eq(b.data[b.len], '\0');
    k8s_buf_done(&b);
    cr_expect_null(b.data);
    cr_expect_eq(b.len, 0);
}

Test(k8s_buf, grows_across_many_appends)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(k8s_buf_append(&b, "0123456789", 10), 0);
    cr_expect_eq(b.len, 100000);
    cr_expect_geq(b.alloc, b.len + 1);
    cr_expect_eq(b.data[99999], '9');
    cr_expect_eq(b.data[100000], '\0');
    cr_expect_eq(strlen(b.data), 100000);
    k8s_buf_done(&b);
}

Test(k8s_buf, cap_exact_fits_terminator_not_counted)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 4);
    cr_assert_eq(k8s_buf_appends(&b, "abcd"), 0);
    cr_expect_str_eq(k8s_buf_str(&b), "abcd");
    cr_expect_eq(b.len, 4);
    k8s_buf_done(&b);
}

Test(k8s_buf, past_cap_too_big_and_reset)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 4);
    cr_assert_eq(k8s_buf_appends(&b, "abc"), 0);
    cr_expect_eq(k8s_buf_appends(&b, "de"), -K8S_ETOOBIG);
    cr_expect_null(b.data);
    cr_expect_eq(b.len, 0);
    cr_expect_eq(b.alloc, 0);
    cr_expect_str_eq(k8s_buf_str(&b), "");
    /* still usable, still capped */
    cr_assert_eq(k8s_buf_appends(&b, "xy"), 0);
    cr_expect_str_eq(k8s_buf_str(&b), "xy");
    cr_expect_eq(k8s_buf_append(&b, "12345", 5), -K8S_ETOOBIG);
    cr_expect_eq(b.len, 0);
    /* a single append larger than the cap on an empty buffer */
    cr_expect_eq(k8s_buf_append(&b, "12345", 5), -K8S_ETOOBIG);
    /* SIZE_MAX does not overflow the check */
    cr_expect_eq(k8s_buf_append(&b, "x", (size_t)-1), -K8S_ETOOBIG);
    k8s_buf_done(&b);
}

Test(k8s_buf, zero_cap)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 0);
    cr_expect_eq(k8s_buf_appends(&b, "a"), -K8S_ETOOBIG);
    cr_expect_str_eq(k8s_buf_str(&b), "");
    k8s_buf_done(&b);
}

Test(k8s_buf, printf_formats_and_caps)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 32);
    cr_assert_eq(k8s_buf_printf(&b, "%s=%d", "port", 8443), 0);
    cr_assert_eq(k8s_buf_printf(&b, ",%05.1f,%x", 2.25, 255), 0);
    cr_expect_str_eq(k8s_buf_str(&b), "port=8443,002.2,ff");
    cr_expect_eq(b.len, strlen("port=8443,002.2,ff"));
    cr_assert_eq(k8s_buf_printf(&b, "%s", ""), 0);
    cr_expect_eq(b.len, 18);
    cr_expect_eq(k8s_buf_printf(&b, "%020d", 1), -K8S_ETOOBIG); /* 18 + 20 > 32 */
    cr_expect_null(b.data);
    cr_expect_eq(b.len, 0);
    cr_assert_eq(k8s_buf_printf(&b, "%s", "0123456789abcdef0123456789abcdef"), 0); /* == cap */
    cr_expect_eq(b.len, 32);
    k8s_buf_done(&b);
}

Test(k8s_buf, reset_keeps_memory)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 100);
    cr_assert_eq(k8s_buf_appends(&b, "hello"), 0);
    char *mem = b.data;
    size_t alloc = b.alloc;
    k8s_buf_reset(&b);
    cr_expect_eq(b.len, 0);
    cr_expect_eq(b.data, mem);
    cr_expect_eq(b.alloc, alloc);
    cr_expect_str_eq(k8s_buf_str(&b), "");
    cr_assert_eq(k8s_buf_appends(&b, "hi"), 0);
    cr_expect_str_eq(k8s_buf_str(&b), "hi");
    k8s_buf_done(&b);
    /* reset of a never-used buffer */
    k8s_buf_init(&b, 1);
    k8s_buf_reset(&b);
    cr_expect_str_eq(k8s_buf_str(&b), "");
}

Test(k8s_buf, consume_keeps_the_rest_and_frees_when_empty)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 100);
    cr_assert_eq(k8s_buf_appends(&b, "frame-1|frame-2"), 0);
    k8s_buf_consume(&b, 8);
    cr_expect_str_eq(k8s_buf_str(&b), "frame-2");
    cr_expect_eq(b.len, 7);
    cr_assert_eq(k8s_buf_appends(&b, "+"), 0); /* still appendable */
    cr_expect_str_eq(k8s_buf_str(&b), "frame-2+");
    k8s_buf_consume(&b, 0);
    cr_expect_eq(b.len, 8);
    k8s_buf_consume(&b, 8); /* all of it: the memory goes too */
    cr_expect_null(b.data);
    cr_expect_eq(b.len, 0);
    cr_expect_eq(b.alloc, 0);
    k8s_buf_consume(&b, 5); /* empty: a no-op */
    cr_expect_null(b.data);
    cr_assert_eq(k8s_buf_appends(&b, "abc"), 0);
    k8s_buf_consume(&b, 99); /* more than there is */
    cr_expect_null(b.data);
}

Test(k8s_buf, take_hands_out_and_resets)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 100);
    cr_assert_eq(k8s_buf_appends(&b, "payload"), 0);
    size_t len = 0;
    char *s = k8s_buf_take(&b, &len);
    cr_assert_not_null(s);
    cr_expect_str_eq(s, "payload");
    cr_expect_eq(len, 7);
    cr_expect_null(b.data);
    cr_expect_eq(b.len, 0);
    cr_expect_eq(b.max, 100, "the cap survives");
    free(s);
    /* an empty buffer yields "" */
    len = 99;
    s = k8s_buf_take(&b, &len);
    cr_assert_not_null(s);
    cr_expect_str_eq(s, "");
    cr_expect_eq(len, 0);
    free(s);
    s = k8s_buf_take(&b, NULL);
    cr_assert_not_null(s);
    free(s);
    /* reusable after take */
    cr_assert_eq(k8s_buf_appends(&b, "again"), 0);
    cr_expect_str_eq(k8s_buf_str(&b), "again");
    k8s_buf_done(&b);
}

Test(k8s_buf, reserve_commit)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 16);
    cr_assert_eq(k8s_buf_appends(&b, "ab"), 0);
    char *tail = NULL;
    cr_assert_eq(k8s_buf_reserve(&b, 10, &tail), 0);
    cr_assert_not_null(tail);
    cr_expect_eq(tail, b.data + 2);
    memcpy(tail, "cdefg", 5);
    k8s_buf_commit(&b, 3); /* commit less than reserved */
    cr_expect_eq(b.len, 5);
    cr_expect_str_eq(k8s_buf_str(&b), "abcde");
    cr_assert_eq(k8s_buf_reserve(&b, 11, &tail), 0); /* 5 + 11 == cap */
    k8s_buf_commit(&b, 0);
    cr_expect_str_eq(k8s_buf_str(&b), "abcde");
    char *untouched = (char *)0x1;
    cr_expect_eq(k8s_buf_reserve(&b, 12, &untouched), -K8S_ETOOBIG);
    cr_expect_eq(b.len, 0);
    cr_expect_null(b.data);
    k8s_buf_done(&b);
}

static char *write_temp(const char *content, size_t n)
{
    char *path = strdup("/tmp/k8s_buf_test_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, content, n), (ssize_t)n);
    close(fd);
    return path;
}

Test(k8s_buf, read_file_ok)
{
    char *path = write_temp("line1\nline2\0tail", 16);
    char *buf = NULL;
    size_t len = 0;
    struct k8s_error err = {0};
    cr_assert_eq(k8s_read_file(path, 16, &buf, &len, &err), 0, "%s", err.message);
    cr_expect_eq(len, 16);
    cr_expect_eq(memcmp(buf, "line1\nline2\0tail", 16), 0);
    cr_expect_eq(buf[16], '\0');
    free(buf);
    unlink(path);
    free(path);
}

Test(k8s_buf, read_file_empty)
{
    char *path = write_temp("", 0);
    char *buf = NULL;
    size_t len = 7;
    cr_assert_eq(k8s_read_file(path, 10, &buf, &len, NULL), 0);
    cr_expect_eq(len, 0);
    cr_expect_str_eq(buf, "");
    free(buf);
    unlink(path);
    free(path);
}

Test(k8s_buf, read_file_missing_names_path)
{
    char *buf = (char *)0x1;
    size_t len = 5;
    struct k8s_error err = {0};
    const char *path = "/nonexistent/dir/mld-test-file.json";
    cr_expect_eq(k8s_read_file(path, 100, &buf, &len, &err), -K8S_EIO);
    cr_expect_eq(err.err, -K8S_EIO);
    cr_expect_str_eq(err.message, "/nonexistent/dir/mld-test-file.json: No such file or directory");
    cr_expect_eq(buf, (char *)0x1, "output untouched");
    cr_expect_eq(len, 5);
}

Test(k8s_buf, read_file_too_big_names_path)
{
    char *path = write_temp("0123456789", 10);
    char *buf = (char *)0x1;
    size_t len = 5;
    struct k8s_error err = {0};
    cr_expect_eq(k8s_read_file(path, 9, &buf, &len, &err), -K8S_ETOOBIG);
    char want[256];
    snprintf(want, sizeof(want), "%s: file too large", path);
    cr_expect_str_eq(err.message, want);
    cr_expect_eq(buf, (char *)0x1);
    cr_expect_eq(len, 5);
    /* exactly max is fine */
    cr_assert_eq(k8s_read_file(path, 10, &buf, &len, &err), 0);
    cr_expect_eq(len, 10);
    free(buf);
    unlink(path);
    free(path);
}

Test(k8s_buf, read_file_directory_is_io_error)
{
    char *buf = (char *)0x1;
    size_t len = 5;
    struct k8s_error err = {0};
    cr_expect_eq(k8s_read_file("/tmp", 100, &buf, &len, &err), -K8S_EIO);
    cr_expect_eq(strncmp(err.message, "/tmp: ", 6), 0, "%s", err.message);
    cr_expect_eq(buf, (char *)0x1);
}

Test(k8s_buf, read_file_fixture)
{
    char *path = ts_fixture_path("unit/buf/small.txt");
    char *buf = NULL;
    size_t len = 0;
    cr_assert_eq(k8s_read_file(path, 1 << 20, &buf, &len, NULL), 0);
    cr_expect_str_eq(buf, "hello fixture\n");
    cr_expect_eq(len, 14);
    free(buf);
    free(path);
}

/* k8s_strjoin cuts where snprintf("%s%s%s") cuts, at every capacity. */
Test(k8s_buf, strjoin_as_snprintf)
{
    for (size_t cap = 1; cap < 16; cap++) {
        char got[16], want[16];
        memset(got, 'x', sizeof(got));
        size_t n = k8s_strjoin(got, cap, "ab", "", "cdef", "g", NULL);
        int full = snprintf(want, cap, "%s%s%s%s", "ab", "", "cdef", "g");
        cr_expect_str_eq(got, want, "cap %zu", cap);
        cr_expect_eq(n, (size_t)full < cap ? (size_t)full : cap - 1);
    }
    char one[8];
    cr_expect_eq(k8s_strjoin(one, sizeof(one), NULL), 0);
    cr_expect_str_eq(one, "");
}

/* The array form, and the list without its NULL (the macro adds one). */
Test(k8s_buf, strjoinv_and_the_list_without_null)
{
    const char *const parts[] = {"k8s.", "JobSet", ".name", NULL};
    char out[32], cut[8];
    cr_expect_eq(k8s_strjoinv(out, sizeof(out), parts), 15);
    cr_expect_str_eq(out, "k8s.JobSet.name");
    cr_expect_eq(k8s_strjoinv(cut, sizeof(cut), parts), 7);
    cr_expect_str_eq(cut, "k8s.Job");
    cr_expect_eq(k8s_strjoin(out, sizeof(out), "a", "b"), 2);
    cr_expect_str_eq(out, "ab");
    const char *const none[] = {NULL};
    cr_expect_eq(k8s_strjoinv(out, 1, none), 0);
    cr_expect_str_eq(out, "");
}

/* k8s_buf_cat as k8s_buf_catv of its arguments, with or without the NULL;
 * past the cap the buffer is dropped as by any append. */
Test(k8s_buf, catv_and_cat_without_null)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 8);
    const char *const parts[] = {"ab", "", "cd", NULL};
    cr_assert_eq(k8s_buf_catv(&b, parts), 0);
    cr_assert_eq(k8s_buf_cat(&b, "e", "f"), 0);
    cr_expect_str_eq(k8s_buf_str(&b), "abcdef");
    cr_expect_eq(k8s_buf_cat(&b, "g", "hi", NULL), -K8S_ETOOBIG);
    cr_expect_eq(b.len, 0);
    cr_expect_null(b.data);
    k8s_buf_done(&b);
}

/* The one decimal writer (the log line's numbers, JSON integers, patch
 * path indices): every width, both extremes, and no byte past the end. */
Test(k8s_buf, put_int_and_append_int)
{
    static const struct {
        long long v;
        const char *want;
    } cases[] = {{0, "0"},
                 {7, "7"},
                 {-1, "-1"},
                 {10, "10"},
                 {1234567890123LL, "1234567890123"},
                 {LLONG_MAX, "9223372036854775807"},
                 {LLONG_MIN, "-9223372036854775808"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[K8S_INT_CHARS + 1];
        memset(out, '#', sizeof(out));
        char *end = k8s_put_int(out, cases[i].v);
        cr_assert_leq((size_t)(end - out), (size_t)K8S_INT_CHARS);
        cr_expect_eq(*end, '#', "wrote past the digits of %lld", cases[i].v);
        *end = '\0';
        cr_expect_str_eq(out, cases[i].want);
        struct k8s_buf b;
        k8s_buf_init(&b, strlen(cases[i].want)); /* exactly the room it needs */
        cr_assert_eq(k8s_buf_append_int(&b, cases[i].v), 0);
        cr_expect_str_eq(k8s_buf_str(&b), cases[i].want);
        cr_expect_eq(k8s_buf_append_int(&b, 1), -K8S_ETOOBIG);
        k8s_buf_done(&b);
    }
}
