/* op_status: conditions with stable transition times, and status writes
 * and reads against a local HTTP server (libmicrohttpd) that records what
 * it was sent and answers as the API server would (200, 409, 404). */
#include <criterion/criterion.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_client.h"
#include "k8s_jget.h"
#include "k8s_time.h"
#include "op_status.h"

#define T0 ((time_t)1764562630)

static struct {
    struct MHD_Daemon *d;
    struct k8s_client *client;
    unsigned answer; /* HTTP status to answer */
    char method[16], url[512];
    json_t *body; /* what the last request carried */
} sv;

struct upload {
    char buf[65536];
    size_t len;
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_len, void **con_cls)
{
    (void)cls, (void)version;
    struct upload *up = *con_cls;
    if (!up) {
        *con_cls = calloc(1, sizeof(struct upload));
        return MHD_YES;
    }
    if (*data_len) {
        cr_assert_lt(up->len + *data_len, sizeof(up->buf));
        memcpy(up->buf + up->len, data, *data_len);
        up->len += *data_len;
        *data_len = 0;
        return MHD_YES;
    }
    snprintf(sv.method, sizeof(sv.method), "%s", method);
    snprintf(sv.url, sizeof(sv.url), "%s", url);
    json_decref(sv.body);
    sv.body = up->len ? json_loadb(up->buf, up->len, 0, NULL) : NULL;
    json_t *reply = NULL;
    if (sv.answer == 200) { /* the object as stored: a new resourceVersion */
        reply = sv.body ? json_deep_copy(sv.body)
                        : json_pack("{s:{s:s, s:s, s:s}}", "metadata", "name", "cap", "namespace",
                                    "ml", "resourceVersion", "7");
        json_object_set_new(json_object_get(reply, "metadata"), "resourceVersion",
                            json_string("8"));
    } else {
        reply = json_pack("{s:s, s:s, s:s, s:s, s:i}", "kind", "Status", "status", "Failure",
                          "reason", sv.answer == 409 ? "Conflict" : "NotFound", "message",
                          "said the server", "code", (int)sv.answer);
    }
    char *text = json_dumps(reply, JSON_COMPACT);
    json_decref(reply);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, sv.answer, r);
    MHD_destroy_response(r);
    return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode code)
{
    (void)cls, (void)conn, (void)code;
    free(*con_cls);
    *con_cls = NULL;
}

static void setup(void)
{
    memset(&sv, 0, sizeof(sv));
    sv.answer = 200;
    sv.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handle, NULL,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    cr_assert_not_null(sv.d);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(sv.d, MHD_DAEMON_INFO_BIND_PORT);
    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%u", (unsigned)info->port);
    struct k8s_config cfg = {.server = server};
    struct k8s_error err;
    cr_assert_eq(k8s_client_new(&cfg, &sv.client, &err), 0, "%s", err.message);
}

static void teardown(void)
{
    k8s_client_free(sv.client);
    MHD_stop_daemon(sv.d);
    json_decref(sv.body);
}

static json_t *resource(void)
{
    return json_pack("{s:{s:s, s:s, s:s}, s:{s:{s:i}}, s:{s:s}}", "metadata", "name", "cap",
                     "namespace", "ml", "resourceVersion", "7", "spec", "triggerCapture",
                     "durationSeconds", 10, "status", "phase", "Pending");
}

/* ---------- conditions ---------- */

Test(op_status, a_condition_keeps_its_transition_time_while_its_status_stays)
{
    json_t *st = json_object();
    op_condition_set(st, "Complete", "False", "Pending", "waiting", 1, T0);
    cr_assert_eq(op_condition_since(st, "Complete", "False"), T0);
    op_condition_set(st, "Complete", "False", "InProgress", "capturing", 2, T0 + 30);
    cr_assert_eq(op_condition_since(st, "Complete", "False"), T0, "same status: same time");
    const json_t *c = json_array_get(json_object_get(st, "conditions"), 0);
    cr_assert_eq(json_array_size(json_object_get(st, "conditions")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), "InProgress");
    cr_assert_str_eq(json_string_value(json_object_get(c, "message")), "capturing");
    cr_assert_eq(json_integer_value(json_object_get(c, "observedGeneration")), 2);
    op_condition_set(st, "Complete", "True", "Succeeded", "done", 2, T0 + 60);
    cr_assert_eq(op_condition_since(st, "Complete", "True"), T0 + 60, "a flip: a new time");
    cr_assert_eq(op_condition_since(st, "Complete", "False"), 0, "no longer False");
    json_decref(st);
}

Test(op_status, conditions_of_several_types_live_side_by_side)
{
    json_t *st = json_object();
    op_condition_set(st, "Valid", "True", "Valid", "ok", 1, T0);
    op_condition_set(st, "TargetsReady", "False", "Waiting", "p-1", 1, T0 + 5);
    cr_assert_eq(json_array_size(json_object_get(st, "conditions")), 2);
    cr_assert_eq(op_condition_since(st, "Valid", "True"), T0);
    cr_assert_eq(op_condition_since(st, "TargetsReady", "False"), T0 + 5);
    cr_assert_eq(op_condition_since(st, "Complete", "False"), 0, "absent");
    json_decref(st);
}

Test(op_status, a_condition_list_that_is_not_an_array_is_replaced)
{
    json_t *st = json_pack("{s:s}", "conditions", "garbage");
    op_condition_set(st, "Valid", "True", "Valid", "ok", 1, T0);
    cr_assert(json_is_array(json_object_get(st, "conditions")));
    cr_assert_eq(op_condition_since(st, "Valid", "True"), T0);
    json_decref(st);
}

Test(op_status, str2_reads_a_nested_string_or_null)
{
    json_t *o = resource();
    cr_assert_str_eq(k8s_jstr2(o, "metadata", "name"), "cap");
    cr_assert_null(k8s_jstr2(o, "metadata", "uid"));
    cr_assert_null(k8s_jstr2(o, "spec", "triggerCapture"), "not a string");
    cr_assert_null(k8s_jstr2(NULL, "a", "b"));
    json_decref(o);
}

/* ---------- the status subresource ---------- */

TestSuite(op_status_api, .init = setup, .fini = teardown);

Test(op_status_api, put_replaces_the_status_with_the_objects_resource_version)
{
    json_t *o = resource(), *done = NULL;
    struct k8s_error err;
    cr_assert_eq(op_status_put(sv.client, o, json_pack("{s:s}", "phase", "Running"), &done, &err),
                 0, "%s", err.message);
    cr_assert_str_eq(sv.method, "PUT");
    cr_assert_str_eq(sv.url, "/apis/diagon.gke.io/v1alpha1/namespaces/ml/"
                             "mldiagnosticsconnections/cap/status");
    cr_assert_str_eq(k8s_jstr2(sv.body, "status", "phase"), "Running");
    cr_assert_str_eq(k8s_jstr2(sv.body, "metadata", "resourceVersion"), "7", "the precondition");
    cr_assert_str_eq(json_string_value(json_object_get(sv.body, "apiVersion")), OP_GROUP_VERSION);
    cr_assert_str_eq(json_string_value(json_object_get(sv.body, "kind")), OP_KIND);
    cr_assert_not_null(json_object_get(sv.body, "spec"), "the rest of the object is sent");
    cr_assert_str_eq(k8s_jstr2(done, "metadata", "resourceVersion"), "8", "the server's answer");
    cr_assert_str_eq(k8s_jstr2(o, "status", "phase"), "Pending", "obj is borrowed, untouched");
    json_decref(done);
    json_decref(o);
}

Test(op_status_api, a_stale_write_is_a_conflict)
{
    sv.answer = 409;
    json_t *o = resource(), *done = NULL;
    struct k8s_error err;
    cr_assert_eq(op_status_put(sv.client, o, json_object(), &done, &err), -K8S_ECONFLICT);
    cr_assert_null(done);
    json_decref(o);
}

Test(op_status_api, an_object_without_a_name_is_refused_before_sending)
{
    json_t *o = json_pack("{s:{s:s}}", "metadata", "namespace", "ml");
    struct k8s_error err;
    json_t *done = NULL;
    cr_assert_eq(op_status_put(sv.client, o, json_object(), &done, &err), -K8S_EINVAL);
    cr_assert(strstr(err.message, "namespace or name"), "%s", err.message);
    cr_assert_str_eq(sv.method, "", "nothing sent");
    json_decref(o);
}

Test(op_status_api, get_reads_the_resource_and_maps_404)
{
    json_t *o = NULL;
    struct k8s_error err;
    cr_assert_eq(op_status_get(sv.client, "ml", "cap", &o, &err), 0, "%s", err.message);
    cr_assert_str_eq(sv.method, "GET");
    cr_assert_str_eq(sv.url,
                     "/apis/diagon.gke.io/v1alpha1/namespaces/ml/mldiagnosticsconnections/cap");
    cr_assert_str_eq(k8s_jstr2(o, "metadata", "name"), "cap");
    json_decref(o);
    sv.answer = 404;
    o = NULL;
    cr_assert_eq(op_status_get(sv.client, "ml", "gone", &o, &err), -K8S_ENOTFOUND);
    cr_assert_null(o);
}
