/*
 * wh_env — the environment variables the webhook injects into one pod
 * (DESIGN §3.5): the set of them written for the pod (wh_envset, from the
 * rows of wh_envtab and the settings' rows of a wh_envbase), and the JSON
 * Patch operations that add them to one container without overwriting
 * anything the user set.
 *
 * Order: every variable is placed after the variables its $(…)
 * references name, and before the first user variable that references it
 * (so user variables built from ours resolve too). A user's
 * OTEL_RESOURCE_ATTRIBUTES is merged key by key (user keys win, user pairs
 * kept as written) unless the pod opts out with
 * diagon.gke.io/otel-resource-attributes-merge: "false".
 *
 * The user's own OpenTelemetry settings take precedence (the OTel spec: a
 * per-signal endpoint overrides OTEL_EXPORTER_OTLP_ENDPOINT, and
 * OTEL_SERVICE_NAME overrides service.name): a container that sets
 * OTEL_EXPORTER_OTLP_ENDPOINT or _PROTOCOL gets no endpoint or insecure
 * variable; one that sets a signal's own endpoint or protocol gets none of
 * that signal's; one whose OTEL_RESOURCE_ATTRIBUTES has service.name gets
 * no OTEL_SERVICE_NAME. Each skip is named in a warning.
 *
 * Thread-safety: reentrant; a base is read-only once built, so threads
 * share it. Ownership: struct wh_envset owns its per-pod values and
 * borrows the settings' rows from a base (cfg's, which must outlive it, or
 * its own); wh_envset_done frees what it owns (NULL-safe, safe on a
 * zeroed struct).
 * Failure: -K8S_ENOMEM; shape problems of a container are warnings.
 */
#ifndef WH_ENV_H
#define WH_ENV_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"
#include "k8s_jsonpatch_text.h"
#include "k8s_mlrun.h"
#include "wh_attrs.h"
#include "wh_config.h"
#include "wh_envtab.h"
#include "wh_identity.h"
#include "wh_podspec.h"

/* The settings' rows (wh_envbase): cfg's, or a set's own. */
struct wh_envbase;

struct wh_envset {
    size_t n;
    uint64_t name_lens;             /* bit (length mod 64) of every name ours have or reference */
    struct wh_attrs attrs;          /* our resource attributes, without rl.run.id */
    char run_id[K8S_MLRUN_ID_SIZE]; /* "" when unknown */
    char *values;                   /* what the per-pod rows' v[].value point into */
    char *entries;                  /* v[0..n)'s entries one after the other (v[].entry) */
    size_t entries_len;
    struct wh_envbase *own_base;       /* built here when cfg's does not match its settings */
    struct wh_env_var v[WH_ENV_COUNT]; /* dependency order; v[n..] undefined (kept last) */
};

/* Our variables for one pod. Copies what it keeps; the settings' own rows
 * point into cfg->env_base when it matches cfg (so cfg must outlive the
 * set), else into a base of the set's own. `attrs` is moved into the set
 * (the caller's struct is left empty). service_name NULL: no
 * OTEL_SERVICE_NAME (the attributes carry service.name). Each variable's
 * entry is written once here, and copied into every container's patch.
 * -K8S_ENOMEM on failure (set left empty). */
/* An empty set, safe to wh_envset_done (cheaper than zeroing v[]). */
void wh_envset_init(struct wh_envset *set);
int wh_envset_build(struct wh_envset *set, const struct wh_config *cfg,
                    const struct wh_identity *id, const char *service_name,
                    struct wh_attrs *attrs) K8S_MUST_CHECK;
void wh_envset_done(struct wh_envset *set);

/* The full list as a JSON array in order (new reference). */
json_t *wh_envset_json(const struct wh_envset *set);

/* Append to `patch` the operations that bring container (whose JSON
 * Pointer is `cpath`, e.g. "/spec/containers/0") up to date. merge=false
 * leaves a user's OTEL_RESOURCE_ATTRIBUTES untouched. *ret_added is the
 * number of variables added or merged. -K8S_ENOMEM on failure. */
int wh_env_patch(const struct wh_envset *set, const json_t *container, const char *cpath,
                 bool merge, json_t *patch, json_t *warnings, int *ret_added) K8S_MUST_CHECK;
/* The same operations written as text (the admission path): appended to
 * patch, whose text is unusable after a failure. The plan's own buffers
 * come from arena (the request's; NULL: malloc) and are released before
 * it returns. */
int wh_env_patch_text(const struct wh_envset *set, const struct wh_container *c, const char *cpath,
                      bool merge, struct k8s_arena *arena, struct k8s_jsonpatch_text *patch,
                      json_t *warnings, int *ret_added) K8S_MUST_CHECK;

#endif
