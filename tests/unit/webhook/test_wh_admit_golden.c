/* wh_admit, byte for byte: every review of tests/fixtures/unit/admit-golden
 * (every Pod among the fixtures as a review, v1 and v1beta1, the bench
 * reviews, envelopes that are not a pod CREATE) gets exactly the answer
 * stored beside it, first written by the webhook before its response
 * writer was rewritten to emit the patch straight into the answer (issue
 * 14). The answers are made with `admit_bench -o DIR` on the same
 * configuration; they were made again when the patch came to write each
 * list it changes whole (issue 25), each new patch checked to give the
 * same pod as the one before it. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_log.h"
#include "k8s_time.h"
#include "test_support.h"
#include "wh_admit.h"

#define DIR_REL "unit/admit-golden"
#define SUFFIX  ".review.json"

static int compare(const struct wh_admit_ctx *ctx, const char *name)
{
    char path[512];
    size_t len, want_len;
    snprintf(path, sizeof(path), DIR_REL "/%s", name);
    char *body = ts_read_fixture(path, &len);
    snprintf(path + strlen(path) - strlen(SUFFIX), 32, ".response");
    char *want = ts_read_fixture(path, &want_len);
    struct wh_admit_result res;
    cr_assert_eq(wh_admit(ctx, body, len, k8s_mono_ns(), &res), 0, "%s", name);
    char *got = NULL;
    size_t got_len = 0;
    FILE *f = open_memstream(&got, &got_len);
    fprintf(f, "%d %s\n", res.status, res.content_type);
    fwrite(res.body, 1, res.len, f);
    fclose(f);
    cr_expect(got_len == want_len && !memcmp(got, want, got_len),
              "%s: answer differs from the golden one\n got: %.*s\nwant: %.*s", name, (int)got_len,
              got, (int)want_len, want);
    int same = got_len == want_len && !memcmp(got, want, got_len);
    free(got);
    free(res.body);
    free(want);
    free(body);
    return same;
}

Test(wh_admit_golden, every_review_answered_byte_for_byte_as_before)
{
    k8s_log_set_level(-1);
    struct wh_config cfg;
    wh_config_init(&cfg);
    cfg.standalone = true;
    cfg.cluster_name = "projects/demo/locations/us-central1/clusters/tpu-1";
    cr_assert_eq(wh_config_finish(&cfg, NULL), 0);
    struct wh_admit_ctx ctx;
    wh_admit_init(&ctx, &cfg, NULL, NULL);
    DIR *d = opendir(MLD_FIXTURES "/" DIR_REL);
    cr_assert_not_null(d);
    int n = 0, same = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l <= strlen(SUFFIX) || strcmp(e->d_name + l - strlen(SUFFIX), SUFFIX))
            continue;
        same += compare(&ctx, e->d_name);
        n++;
    }
    closedir(d);
    wh_config_done(&cfg);
    cr_assert_geq(n, 100, "only %d golden reviews found", n);
    cr_expect_eq(same, n, "%d of %d answers differ", n - same, n);
}
