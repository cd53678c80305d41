/*
 * op_api — what the capture reconciler does to the world, as function
 * pointers: read a resource, write its status, post an Event, ask whether
 * an object exists, send and cancel a batch of Profile RPCs, create and
 * delete a scheduled capture's children. op_capture
 * calls nothing else, so its tests run it against an in-memory fake with
 * no API server and no profiler; op_api_live gives the real ones (the API
 * server through k8s_client, the RPCs through op_relay).
 *
 * Errors as k8s_err.h: a status write that lost to another writer (409)
 * is -K8S_ECONFLICT, a resource gone -K8S_ENOTFOUND; the reconciler reads
 * afresh and retries on both.
 *
 * Thread-safety: the live implementation is reentrant; a fake must take
 * calls from the reconcile workers, and its batches' done callbacks must
 * not run inside submit or cancel (the caller holds its lock there).
 */
#ifndef OP_API_H
#define OP_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_client.h"
#include "k8s_err.h"
#include "op_relay.h"

struct op_api {
    /* GET the resource fresh (*ret new reference); -K8S_ENOTFOUND. */
    int (*get)(void *ud, const char *ns, const char *name, json_t **ret, struct k8s_error *err);
    /* PUT obj (borrowed) with status (stolen) to its status subresource
     * with obj's resourceVersion; *ret the server's answer (new). */
    int (*put_status)(void *ud, const json_t *obj, json_t *status, json_t **ret,
                      struct k8s_error *err);
    /* Post an Event about obj (a resource of ours), best effort. */
    int (*event)(void *ud, const json_t *obj, const char *type, const char *reason, const char *msg,
                 struct k8s_error *err);
    /* Is the object at this API path gone? true only on a 404. */
    bool (*absent)(void *ud, const char *path);
    /* op_relay_submit / op_relay_cancel. */
    int (*submit)(void *ud, const struct op_batch_spec *spec, op_batch_done_fn done, void *done_ud,
                  uint64_t *ret_id);
    void (*cancel)(void *ud, uint64_t id, const char *reason);
    /* POST obj (borrowed), a new resource of ours (a scheduled capture's
     * child); -K8S_ECONFLICT when one of its name exists. */
    int (*create)(void *ud, const json_t *obj, struct k8s_error *err);
    /* DELETE the resource ns/name; -K8S_ENOTFOUND when it is gone. */
    int (*remove)(void *ud, const char *ns, const char *name, struct k8s_error *err);
    void *ud;
};

/* The real world; io borrowed, must outlive the returned table's use. */
struct op_api_io {
    struct k8s_client *client;
    struct op_relay *relay;
    const char *identity; /* the Events' reporting instance */
};

struct op_api op_api_live(struct op_api_io *io);

#endif
