#include "op_api.h"

#include <stdio.h>

#include "k8s_jget.h"
#include "op_event.h"
#include "op_status.h"

static int get(void *ud, const char *ns, const char *name, json_t **ret, struct k8s_error *err)
{
    struct op_api_io *io = ud;
    return op_status_get(io->client, ns, name, ret, err);
}

static int put_status(void *ud, const json_t *obj, json_t *status, json_t **ret,
                      struct k8s_error *err)
{
    struct op_api_io *io = ud;
    return op_status_put(io->client, obj, status, ret, err);
}

static int event(void *ud, const json_t *obj, const char *type, const char *reason, const char *msg,
                 struct k8s_error *err)
{
    struct op_api_io *io = ud;
    struct op_event_ref ref = op_event_ref_of(obj, OP_GROUP_VERSION, OP_KIND);
    return op_event_post(io->client, &ref, type, reason, msg, io->identity, err);
}

static bool absent(void *ud, const char *path)
{
    struct op_api_io *io = ud;
    json_t *o = NULL;
    struct k8s_error err;
    int r = k8s_get_json(io->client, path, K8S_ACCEPT_META, 5000, &o, &err);
    json_decref(o);
    return r == -K8S_ENOTFOUND;
}

static int submit(void *ud, const struct op_batch_spec *spec, op_batch_done_fn done, void *done_ud,
                  uint64_t *ret_id)
{
    struct op_api_io *io = ud;
    return op_relay_submit(io->relay, spec, done, done_ud, ret_id);
}

static void cancel(void *ud, uint64_t id, const char *reason)
{
    struct op_api_io *io = ud;
    op_relay_cancel(io->relay, id, reason);
}

static int create(void *ud, const json_t *obj, struct k8s_error *err)
{
    struct op_api_io *io = ud;
    char path[600];
    const char *ns = k8s_jstr2(obj, "metadata", "namespace");
    snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/%s", OP_GROUP_VERSION, ns ? ns : "",
             OP_PLURAL);
    return k8s_send_json(io->client, "POST", path, NULL, obj, 10000, NULL, err);
}

static int remove_one(void *ud, const char *ns, const char *name, struct k8s_error *err)
{
    struct op_api_io *io = ud;
    char path[800];
    snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/%s/%s", OP_GROUP_VERSION, ns, OP_PLURAL,
             name);
    struct k8s_req rq = {.method = "DELETE", .path = path, .timeout_ms = 10000};
    struct k8s_resp resp;
    int r = k8s_client_do(io->client, &rq, &resp, err);
    if (r == 0)
        k8s_resp_done(&resp);
    return r;
}

struct op_api op_api_live(struct op_api_io *io)
{
    return (struct op_api){get, put_status, event, absent, submit, cancel, create, remove_one, io};
}
