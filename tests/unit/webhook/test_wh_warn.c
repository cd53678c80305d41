/* wh_warn: bounded, deduplicated admission warnings; wh_warnf and its
 * concatenating twin wh_warn_cat give the same text. */
#include <criterion/criterion.h>
#include <string.h>

#include "wh_warn.h"

static const char *at(json_t *w, size_t i)
{
    return json_string_value(json_array_get(w, i));
}

Test(wh_warn, formats_and_copies)
{
    json_t *w = json_array();
    wh_warnf(w, "plain text, nothing to format");
    wh_warnf(w, "100%% sure: %s=%d", "x", 7);
    wh_warn_cat(w, "GKE_DIAGON_METADATA omits ", "creation-timestamp", ": ", "why", NULL);
    wh_warn_cat(w, NULL); /* the empty message */
    cr_assert_eq(json_array_size(w), 4);
    cr_expect_str_eq(at(w, 0), "plain text, nothing to format");
    cr_expect_str_eq(at(w, 1), "100% sure: x=7");
    cr_expect_str_eq(at(w, 2), "GKE_DIAGON_METADATA omits creation-timestamp: why");
    cr_expect_str_eq(at(w, 3), "");
    json_decref(w);
}

Test(wh_warn, duplicates_dropped_across_both)
{
    json_t *w = json_array();
    wh_warnf(w, "mldiagnostics: %s", "standalone");
    wh_warn_cat(w, "mldiagnostics: ", "standalone", NULL);
    wh_warnf(w, "mldiagnostics: standalone");
    cr_expect_eq(json_array_size(w), 1);
    json_decref(w);
}

Test(wh_warn, bounded_and_null_safe)
{
    wh_warnf(NULL, "ignored");
    wh_warn_cat(NULL, "ignored", NULL);
    json_t *w = json_array();
    for (int i = 0; i < 2 * WH_WARN_MAX; i++) {
        char n[8] = {'w', (char)('a' + i), '\0'};
        if (i % 2)
            wh_warn_cat(w, n, NULL);
        else
            wh_warnf(w, "%s", n);
    }
    cr_expect_eq(json_array_size(w), WH_WARN_MAX);
    json_decref(w);
}

/* A long message is cut to WH_WARN_LEN - 1 bytes ending in "...", never
 * inside a UTF-8 sequence; every way of making it gives the same cut. */
Test(wh_warn, long_messages_cut_alike)
{
    char longer[600], half[300];
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    for (size_t i = 230; i + 2 < sizeof(longer); i += 2) /* "é" from byte 230 on */
        memcpy(longer + i, "\xc3\xa9", 2);
    memcpy(half, longer, 299);
    half[299] = '\0';
    for (size_t shift = 0; shift < 4; shift++) {
        json_t *w = json_array();
        const char *s = longer + shift;
        wh_warnf(w, "%s", s);
        wh_warn_cat(w, s, NULL);
        wh_warn_cat(w, half + shift, longer + 299, NULL);
        cr_assert_eq(json_array_size(w), 1, "shift %zu", shift);
        const char *got = at(w, 0);
        size_t n = strlen(got);
        cr_expect_leq(n, WH_WARN_LEN - 1);
        cr_expect_geq(n, WH_WARN_LEN - 5);
        cr_expect_str_eq(got + n - 3, "...");
        cr_expect(((unsigned char)got[n - 4] & 0xC0) != 0xC0, "no sequence cut: %zu", shift);
        cr_expect_eq(strncmp(got, s, n - 3), 0);
        json_decref(w);
    }
}

/* 34 plain bytes, 8 times: a literal longer than a warning may be */
#define PLAIN34  "0123456789abcdefghijklmnopqrstuvwx"
#define PLAIN272 PLAIN34 PLAIN34 PLAIN34 PLAIN34 PLAIN34 PLAIN34 PLAIN34 PLAIN34

/* A format with nothing to format is copied, cut as printf would cut it. */
Test(wh_warn, plain_format_cut_as_printf)
{
    json_t *w = json_array();
    wh_warnf(w, PLAIN272);
    wh_warnf(w, "%s", PLAIN272);
    cr_assert_eq(json_array_size(w), 1);
    cr_expect_eq(strlen(at(w, 0)), WH_WARN_LEN - 1);
    cr_expect_str_eq(at(w, 0) + WH_WARN_LEN - 4, "...");
    json_decref(w);
}
