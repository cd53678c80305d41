/*
 * wh_mutate — the pure core of the webhook: (pod, lookups, config) →
 * decision + RFC 6902 patch + warnings. Shared by the admission server and
 * the offline `inject` command, so both produce byte-identical patches.
 *
 * No I/O except through the lookup ops (none in standalone/offline mode);
 * never logs. Every patch it returns applies cleanly with a standard
 * RFC 6902 implementation: missing parents are added whole, JSON Pointers
 * are escaped, no env name, volume name or mountPath is duplicated, and a
 * second run over the patched pod yields no operations (idempotent).
 *
 * The patch is written as JSON text (k8s_jsonpatch_text); the admission
 * path (in->text_only) sends that text, everyone else gets the tree parsed
 * from it, so both see the same bytes.
 *
 * Thread-safety: reentrant; cfg and lookups are shared read-only.
 * Ownership: struct wh_mutate_out owns its JSON and its text (neither
 * taken from in->arena, which holds only the decision's own buffers,
 * released before wh_mutate returns); release with wh_mutate_out_done
 * (NULL-safe, safe on a zeroed struct).
 */
#ifndef WH_MUTATE_H
#define WH_MUTATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "k8s_err.h"
#include "k8s_jsonpatch_text.h"
#include "k8s_mlrun.h"
#include "k8s_names.h"
#include "wh_config.h"
#include "wh_lookup.h"
#include "wh_meta.h"
#include "wh_podspec.h"
#include "wh_workload.h"

#define WH_VOLUME_NAME "mldiagnostics-metadata"
#define WH_MOUNT_PATH  "/var/run/mldiagnostics"

struct wh_mutate_in {
    const json_t *pod;                  /* a Pod, or a pod template {metadata, spec} */
    const struct wh_pod *view;          /* the pod already read; NULL: read from pod */
    const char *ns;                     /* the pod's namespace ("" when unknown) */
    const char *path;                   /* JSON Pointer of pod in the patched document */
    const struct wh_workload *workload; /* pre-resolved (offline), or NULL to resolve */
    time_t now;                         /* admission time */
    int64_t deadline_ns;                /* CLOCK_MONOTONIC budget for lookups */
    bool text_only;          /* the patch as text alone (out->text), no tree: the admission path */
    struct k8s_arena *arena; /* the request's, for the buffers of the decision; NULL: malloc */
};

struct wh_mutate_out {
    bool inject;                    /* the pod is opted in and has target containers */
    char reason[320];               /* why (logs, --explain); holds a wh_decision's */
    json_t *patch;                  /* array of operations, possibly empty; NULL with text_only */
    struct k8s_jsonpatch_text text; /* with text_only: the same operations as JSON text */
    json_t *warnings;               /* array of strings */
    char workload[330];             /* "Kind/name" of the workload */
    int containers;                 /* containers that received changes */
    char injection[64];             /* the diagon.gke.io/injection value ("" when skipped) */
    char run_id[K8S_MLRUN_ID_SIZE]; /* the SDK's run id ("" when skipped or it would refuse) */
    unsigned missing; /* k8s_mlrun fields (bits) the identity lacks: the SDK will refuse */
};

/* Decide and build the patch. Problems with the pod's shape or with
 * lookups are reported as a skip or as warnings, never as failures; the
 * only failure is -K8S_ENOMEM (then *ret is empty). */
int wh_mutate(const struct wh_config *cfg, const struct wh_lookup *lk,
              const struct wh_mutate_in *in, struct wh_mutate_out *ret) K8S_MUST_CHECK;

void wh_mutate_out_done(struct wh_mutate_out *out);

#endif
