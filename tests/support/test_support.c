#include "test_support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

char *ts_fixture_path(const char *rel)
{
    char *p = NULL;
    cr_assert(asprintf(&p, "%s/%s", MLD_FIXTURES, rel) > 0);
    return p;
}

char *ts_read_fixture(const char *rel, size_t *ret_len)
{
    char *path = ts_fixture_path(rel);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open fixture %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    free(path);
    if (ret_len)
        *ret_len = (size_t)n;
    return buf;
}

json_t *ts_load_json(const char *rel)
{
    size_t n;
    char *s = ts_read_fixture(rel, &n);
    json_error_t e;
    json_t *v = json_loadb(s, n, 0, &e);
    cr_assert_not_null(v, "fixture %s: %s (line %d)", rel, e.text, e.line);
    free(s);
    return v;
}
