/* md_show: what kubectl mldiag prints, from objects in
 * tests/fixtures/unit/mldiag/objects.json, against the expected text in
 * tests/fixtures/unit/mldiag/show-*.txt. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "k8s_time.h"
#include "md_show.h"
#include "test_support.h"

#define NOW 1796536000 /* 2026-12-06T05:46:40Z */

static json_t *objs;

static void setup(void)
{
    objs = ts_load_json("unit/mldiag/objects.json");
}

static void teardown(void)
{
    json_decref(objs);
}

TestSuite(md_show, .init = setup, .fini = teardown);

static const json_t *obj(const char *name)
{
    const json_t *o = json_object_get(objs, name);
    cr_assert_not_null(o, "%s", name);
    return o;
}

/* What f wrote, as a new string. */
static char *written(FILE *f)
{
    long n = ftell(f);
    char *s = calloc(1, (size_t)n + 1);
    rewind(f);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

/* got against the text in fixture; MLD_UPDATE_GOLDEN=1 writes it there
 * instead (then read the diff before committing it). */
static void expect(char *got, const char *fixture)
{
    char *path = ts_fixture_path(fixture);
    if (getenv("MLD_UPDATE_GOLDEN")) {
        FILE *w = fopen(path, "w");
        cr_assert_not_null(w, "%s", path);
        fputs(got, w);
        fclose(w);
    }
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    char *want = written(f);
    cr_assert_str_eq(got, want, "%s:\n%s", fixture, got);
    free(want);
    free(got);
    free(path);
}

Test(md_show, a_follower_sees_each_change_once)
{
    FILE *out = tmpfile();
    md_show_progress(out, NULL, obj("pending"));
    md_show_progress(out, obj("pending"), obj("pending")); /* nothing new */
    md_show_progress(out, obj("pending"), obj("running"));
    md_show_progress(out, obj("running"), obj("succeeded"));
    expect(written(out), "unit/mldiag/show-progress.txt");
}

Test(md_show, success_says_where_and_how_to_open)
{
    FILE *out = tmpfile(), *err = tmpfile();
    cr_assert_eq(md_show_outcome(out, err, obj("succeeded")), 0);
    cr_assert_eq(md_show_outcome(out, err, obj("local")), 0);
    cr_assert_eq(md_show_outcome(out, err, obj("running")), -1, "not finished");
    expect(written(out), "unit/mldiag/show-succeeded.txt");
    expect(written(err), "unit/mldiag/show-empty.txt");
}

Test(md_show, failure_names_each_host_on_stderr)
{
    FILE *out = tmpfile(), *err = tmpfile();
    cr_assert_eq(md_show_outcome(out, err, obj("failed")), 1);
    cr_assert_eq(md_show_outcome(out, err, obj("invalid")), 1);
    expect(written(out), "unit/mldiag/show-empty.txt");
    expect(written(err), "unit/mldiag/show-failed.txt");
}

Test(md_show, list_and_status)
{
    json_t *list =
        json_pack("{s:[O, O, O]}", "items", obj("succeeded"), obj("failed"), obj("local"));
    FILE *out = tmpfile();
    md_show_list(out, list, 0, NOW);
    md_show_list(out, list, 1, NOW);
    md_show_status(out, obj("succeeded"), NOW);
    md_show_status(out, obj("failed"), NOW);
    expect(written(out), "unit/mldiag/show-list-status.txt");
    json_decref(list);
}

Test(md_show, ages_as_kubectl_prints_them)
{
    static const struct {
        int64_t ago;
        const char *age;
    } cases[] = {{30, "30s"},
                 {119, "119s"},
                 {125, "2m5s"},
                 {600, "10m"},
                 {106 * 60, "106m"},
                 {4 * 3600 + 60, "4h1m"},
                 {5 * 3600, "5h"},
                 {29 * 3600 + 2760, "30h"},
                 {3 * 86400 + 7200, "3d2h"},
                 {35 * 86400, "35d"},
                 {800 * 86400, "2y"}};
    char age[16], when[21];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        k8s_time_rfc3339((time_t)(NOW - cases[i].ago), when);
        md_show_age(when, NOW, age);
        cr_assert_str_eq(age, cases[i].age, "%lld s ago", (long long)cases[i].ago);
    }
    md_show_age("yesterday", NOW, age);
    cr_assert_str_eq(age, "<unknown>");
}
