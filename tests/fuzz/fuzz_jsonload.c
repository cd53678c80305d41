/*
 * libFuzzer target: the filtered JSON reader against jansson. With no
 * filter both must accept exactly the same documents and build equal
 * values; with the admission filter it must never accept a document that
 * is malformed for any reason other than a number out of range in a
 * member it skips (those are checked for syntax only, by design).
 *
 * One jansson quirk is no finding: jansson 2.14 drops a NUL byte that
 * directly follows a number ("[1\0]" loads as [1]; its lexer ungets the NUL,
 * which its stream buffer takes for "empty"). RFC 8259 allows a NUL neither
 * outside strings nor in them, so for such input jansson is no oracle and
 * the reader must refuse it.
 */
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jsonload.h"
#include "wh_review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool nul_after_digit(const uint8_t *data, size_t size)
{
    for (size_t i = 1; i < size; i++)
        if (!data[i] && data[i - 1] >= '0' && data[i - 1] <= '9')
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *want =
        nul_after_digit(data, size) ? NULL : json_loadb((const char *)data, size, 0, NULL);
    json_t *got = NULL, *filtered = NULL;
    struct k8s_error err;
    int r = k8s_json_load_filtered((const char *)data, size, NULL, &got, &err);
    if ((want != NULL) != (r == 0))
        abort();
    if (want && !json_equal(want, got))
        abort();
    bool range_only = r != 0 && (strstr(err.message, "too big integer") ||
                                 strstr(err.message, "real number overflow"));
    struct k8s_error ferr;
    struct wh_podspec spec = {0};
    int f = k8s_json_load_pull((const char *)data, size, wh_review_filter, &spec, &filtered, &ferr);
    wh_podspec_done(&spec);
    if (f == 0 && r != 0 && !range_only) /* skipped members: only ranges go unchecked */
        abort();
    json_decref(want);
    json_decref(got);
    json_decref(filtered);
    return 0;
}
