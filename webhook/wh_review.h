/*
 * wh_review — the AdmissionReview wire format (admission.k8s.io/v1 and
 * v1beta1, answered in the version asked): decoding a request body and
 * encoding the response with a base64 RFC 6902 patch and warnings.
 *
 * The review is read in one validating pass (k8s_jsonload's pull
 * readers) into plain fields: the envelope's few strings, and of
 * request.object its metadata (wh_meta: name, generateName, namespace,
 * creationTimestamp, labels, annotations, controller owner) and its spec
 * (wh_podspec: containers and initContainers with name, env,
 * volumeMounts, restartPolicy; volume names). Nothing else is kept and
 * no JSON value is built. Skipped members' numbers are checked for
 * syntax, not range (k8s_jsonload).
 *
 * Thread-safety: reentrant. Ownership: struct wh_review owns its strings
 * and the pod read from the object until wh_review_done; their memory is
 * the arena's the decoder is given (wh_admit's per-thread arena; NULL:
 * malloc), which must outlive the review (wh_review_done releases
 * nothing of an arena's: it returns at the arena's reset).
 */
#ifndef WH_REVIEW_H
#define WH_REVIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "k8s_err.h"
#include "k8s_jsonpatch_text.h"
#include "wh_meta.h"

enum wh_review_version { WH_REVIEW_V1, WH_REVIEW_V1BETA1 };

struct wh_review {
    enum wh_review_version version;
    const char *uid;
    const char *ns;        /* request.namespace, else object.metadata.namespace, else "" */
    const char *operation; /* "" when absent */
    struct wh_pod pod;     /* request.object (shape ABSENT when there is none) */
    bool pod_create;       /* a CREATE of a core/v1 Pod (not a subresource) */
    bool dry_run;
    char what[300];          /* "Pod ns/name" or "Pod ns/generateName*" or "<resource>" for logs */
    char *pool;              /* the envelope's strings */
    struct k8s_arena *arena; /* where its memory comes from (NULL: malloc) */
};

/* Decode body[0..len) with arena's memory (NULL: malloc). On failure
 * returns -K8S_EPARSE (not JSON) or -K8S_EINVAL (not an AdmissionReview)
 * with a one-line reason in reterr, and *ret is untouched. */
int wh_review_decode(const char *body, size_t len, struct k8s_arena *arena, struct wh_review *ret,
                     struct k8s_error *reterr) K8S_MUST_CHECK;

void wh_review_done(struct wh_review *rv);

/* The response document for rv: allowed, uid echoed, the patch (base64,
 * with patchType JSONPatch) when patch is a non-empty array, warnings
 * when non-empty. New string (free()), NULL on OOM. */
char *wh_review_respond(const struct wh_review *rv, const json_t *patch, const json_t *warnings,
                        size_t *ret_len);
/* The same document from a patch written as text (NULL or no operations:
 * none), the same bytes as wh_review_respond gives for its tree. */
char *wh_review_respond_text(const struct wh_review *rv, struct k8s_jsonpatch_text *patch,
                             const json_t *warnings, size_t *ret_len);

#endif
