/*
 * wh_annpatch — the JSON Patch operation that sets annotations of the pod
 * (the identity annotations and the injection record, DESIGN §3.5): each
 * added where absent; a `refresh` one replaced where its value differs (an
 * identity annotation must say what the env now says: a pod can arrive
 * with one stale half); any other kept where present (the injection
 * record of a pod injected before).
 *
 * One operation writes the annotations whole: the pod's own, in document
 * order, of duplicate keys the last, with ours replaced in place or added
 * after them. The API server's cost of a JSON Patch grows with its
 * operations far more than with its bytes (tests/bench/patch_size.py
 * times it), so one operation beats one per key. Only when a value of the
 * pod's is not a string (it could not be written back as it was) is each
 * change an operation of its own. Nothing when nothing changes; a
 * warning and nothing when metadata.annotations is not a map.
 *
 * Thread-safety: reentrant. Ownership: borrows everything; appends to
 * patch. Failure: -K8S_ENOMEM, the patch's text then unusable.
 */
#ifndef WH_ANNPATCH_H
#define WH_ANNPATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "k8s_err.h"
#include "k8s_jsonpatch_text.h"
#include "wh_meta.h"

/* One annotation to set. */
struct wh_ann {
    const char *key, *value;
    bool refresh; /* replace a present value that differs */
};

#define WH_ANN_MAX 8 /* annotations one call sets, at most */

/* Append to patch the operation that sets the n (≤ WH_ANN_MAX) annotations
 * of set on the pod whose metadata is meta and whose JSON Pointer is
 * pod_path ("" for the pod itself). */
int wh_annpatch(const struct wh_meta *meta, const char *pod_path, const struct wh_ann *set,
                size_t n, struct k8s_jsonpatch_text *patch, json_t *warnings) K8S_MUST_CHECK;

#endif
