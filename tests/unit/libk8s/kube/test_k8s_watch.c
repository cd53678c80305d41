/* The watch wire format, line framing and the API error mapping. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_client.h"
#include "k8s_lines.h"
#include "k8s_store.h"
#include "k8s_watch.h"
#include "test_support.h"

struct collected {
    char lines[16][256];
    int n;
    int stop_after;
};

static int collect(void *ud, const char *line, size_t len)
{
    struct collected *c = ud;
    snprintf(c->lines[c->n++], 256, "%.*s", (int)len, line);
    return c->stop_after && c->n >= c->stop_after;
}

Test(k8s_lines, lines_split_across_feeds)
{
    struct k8s_lines l;
    struct collected c = {0};
    k8s_lines_init(&l, 64);
    const char *one = "{\"a\":1}\n{\"b\"", *two = ":2}\n\n\r\n{\"c\":3}\n";
    cr_assert_eq(k8s_lines_feed(&l, one, strlen(one), collect, &c), 0);
    cr_assert_eq(c.n, 1);
    cr_assert_eq(k8s_lines_pending(&l), 4);
    cr_assert_eq(k8s_lines_feed(&l, two, strlen(two), collect, &c), 0);
    cr_assert_eq(c.n, 3, "empty lines are skipped");
    cr_assert_str_eq(c.lines[1], "{\"b\":2}");
    cr_assert_str_eq(c.lines[2], "{\"c\":3}");
    cr_assert_eq(k8s_lines_pending(&l), 0);
    k8s_lines_done(&l);
}

Test(k8s_lines, bounded_and_stoppable)
{
    struct k8s_lines l;
    struct collected c = {.stop_after = 1};
    char big[100];
    memset(big, 'x', sizeof(big));
    k8s_lines_init(&l, 64);
    cr_assert_eq(k8s_lines_feed(&l, big, sizeof(big), collect, &c), -K8S_ETOOBIG);
    k8s_lines_done(&l);
    k8s_lines_init(&l, 64);
    cr_assert_eq(k8s_lines_feed(&l, "a\nb\n", 4, collect, &c), 1, "callback asked to stop");
    cr_assert_eq(c.n, 1);
    k8s_lines_done(&l);
}

static const struct k8s_json_filter meta_only[] = {{"metadata", NULL}, {NULL}};

Test(k8s_watch, decodes_every_event_type)
{
    char *text = ts_read_fixture("watch/stream.jsonl", NULL);
    enum k8s_watch_wire want[] = {K8S_WIRE_ADDED, K8S_WIRE_MODIFIED, K8S_WIRE_BOOKMARK,
                                  K8S_WIRE_DELETED, K8S_WIRE_ERROR};
    const char *rv[] = {"11", "12", "15", "16", ""};
    char *save = NULL;
    int i = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
        struct k8s_watch_event ev;
        struct k8s_error err;
        cr_assert_eq(k8s_watch_decode(line, strlen(line), meta_only, &ev, &err), 0, "%s",
                     err.message);
        cr_assert_eq(ev.type, want[i]);
        cr_assert_str_eq(ev.rv, rv[i]);
        if (i == 0) /* the filter keeps metadata only */
            cr_assert_null(json_object_get(ev.object, "kind"));
        if (ev.type == K8S_WIRE_ERROR)
            cr_assert_eq(ev.code, 410);
        json_decref(ev.object);
    }
    cr_assert_eq(i, 5);
    free(text);
}

Test(k8s_watch, bad_lines_are_parse_errors)
{
    const char *bad[] = {"{\"type\":\"ADDED\"}", "{\"type\":\"UPSERT\",\"object\":{}}",
                         "{\"type\":\"ADDED\",\"object\":[]}", "not json", "{\"object\":{}}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct k8s_watch_event ev = {.object = (json_t *)0x1};
        struct k8s_error err;
        cr_assert_lt(k8s_watch_decode(bad[i], strlen(bad[i]), NULL, &ev, &err), 0, "%s", bad[i]);
        cr_assert_eq(ev.object, (json_t *)0x1, "untouched on failure");
    }
}

Test(k8s_client, api_errors_mapped_from_status)
{
    struct k8s_error err;
    const char *conflict = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"the object "
                           "has been modified\",\"reason\":\"Conflict\",\"code\":409}";
    cr_assert_eq(k8s_api_error(409, conflict, strlen(conflict), NULL, &err), -K8S_ECONFLICT);
    cr_assert_str_eq(err.message, "the object has been modified");
    cr_assert_str_eq(err.reason, "Conflict");
    cr_assert_eq(err.http_status, 409);
    const char *apf = "Too many requests, please try again later.\n";
    cr_assert_eq(k8s_api_error(429, apf, strlen(apf), "3", &err), -K8S_ETHROTTLED);
    cr_assert_str_eq(err.message, "Too many requests, please try again later.");
    cr_assert_eq(err.retry_after_s, 3);
    const char *later = "{\"kind\":\"Status\",\"reason\":\"ServerTimeout\",\"details\":"
                        "{\"retryAfterSeconds\":7},\"code\":504}";
    cr_assert_eq(k8s_api_error(504, later, strlen(later), NULL, &err), -K8S_ESERVER);
    cr_assert_eq(err.retry_after_s, 7);
    cr_assert_eq(k8s_api_error(404, "", 0, NULL, &err), -K8S_ENOTFOUND);
    cr_assert_eq(k8s_api_error(410, "", 0, NULL, &err), -K8S_EGONE);
    cr_assert_eq(k8s_api_error(422, "", 0, NULL, &err), -K8S_EINVALID);
    cr_assert_eq(k8s_api_error(401, "", 0, NULL, &err), -K8S_EFORBIDDEN);
    cr_assert_eq(k8s_api_error(503, "", 0, NULL, NULL), -K8S_ESERVER);
}

Test(k8s_store, put_get_replace_remove)
{
    struct k8s_store *s = k8s_store_new();
    json_t *a = json_pack("{s:{s:s, s:s, s:s}}", "metadata", "name", "a", "namespace", "ns",
                          "resourceVersion", "1");
    k8s_store_put_new(s, json_incref(a));
    json_t *got = k8s_store_get(s, "ns", "a");
    cr_assert_eq(got, a);
    json_t *a2 = json_pack("{s:{s:s, s:s, s:s}}", "metadata", "name", "a", "namespace", "ns",
                           "resourceVersion", "2");
    k8s_store_put_new(s, a2);
    cr_assert_eq(k8s_store_get(s, "ns", "a"), a2, "replaced");
    json_decref(a2);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(got, "metadata"), "resourceVersion")),
        "1", "a reader's reference survives the replacement");
    json_t *cluster = json_pack("{s:{s:s}}", "metadata", "name", "ml");
    json_t *kept = k8s_store_put_if_absent_new(s, json_incref(cluster));
    cr_assert_eq(kept, cluster);
    json_decref(kept);
    json_t *dup = json_pack("{s:{s:s}}", "metadata", "name", "ml");
    kept = k8s_store_put_if_absent_new(s, dup);
    cr_assert_eq(kept, cluster, "the existing object wins");
    json_decref(kept);
    cr_assert_eq(k8s_store_size(s), 2);
    k8s_store_remove(s, a);
    cr_assert_null(k8s_store_get(s, "ns", "a"));
    k8s_store_replace_new(s, json_pack("[O]", a));
    cr_assert_eq(k8s_store_size(s), 1);
    cr_assert_null(k8s_store_get(s, "", "ml"), "a relist drops what is gone");
    json_decref(got);
    json_decref(a);
    json_decref(cluster);
    k8s_store_free(s);
}
