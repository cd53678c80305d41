/*
 * wh_env — the environment variables the webhook injects (DESIGN §3.5)
 * and the JSON Patch operations that add them to one container without
 * overwriting anything the user set.
 *
 * Order: every variable is placed after the variables its $(…)
 * references name, and before the first user variable that references it
 * (so user variables built from ours resolve too). A user's
 * OTEL_RESOURCE_ATTRIBUTES is merged key by key (user keys win) unless the
 * pod opts out with diagon.gke.io/otel-resource-attributes-merge: "false".
 *
 * Thread-safety: reentrant. Ownership: struct wh_envset owns its values;
 * wh_envset_done frees them (NULL-safe, safe on a zeroed struct).
 */
#ifndef WH_ENV_H
#define WH_ENV_H

#include <jansson.h>
#include <stdbool.h>

#include "k8s_err.h"
#include "wh_attrs.h"
#include "wh_config.h"
#include "wh_identity.h"

#define WH_ENV_MAX 11

struct wh_env_var {
    const char *name;
    char *value;            /* literal value, or NULL for a fieldRef */
    const char *field_path; /* downward-API fieldRef, or NULL */
};

struct wh_envset {
    struct wh_env_var v[WH_ENV_MAX]; /* dependency order */
    size_t n;
    struct wh_attrs attrs; /* our resource attributes, without rl.run.id */
    char run_id[512];      /* "" when unknown */
};

/* Our variables for one pod. Steals nothing; copies what it keeps.
 * `attrs` is moved into the set (the caller's struct is left empty).
 * -K8S_ENOMEM on failure (set left empty). */
int wh_envset_build(struct wh_envset *set, const struct wh_config *cfg,
                    const struct wh_identity *id, const char *service_name,
                    struct wh_attrs *attrs) K8S_MUST_CHECK;
void wh_envset_done(struct wh_envset *set);

/* The env entry JSON for v (new reference). */
json_t *wh_env_var_json(const struct wh_env_var *v);
/* The full list as a JSON array in order (new reference). */
json_t *wh_envset_json(const struct wh_envset *set);

/* Append to `patch` the operations that bring container (whose JSON
 * Pointer is `cpath`, e.g. "/spec/containers/0") up to date. merge=false
 * leaves a user's OTEL_RESOURCE_ATTRIBUTES untouched. *ret_added is the
 * number of variables added or merged. Shape problems (env not an array)
 * are warnings, not errors. -K8S_ENOMEM on failure. */
int wh_env_patch(const struct wh_envset *set, const json_t *container, const char *cpath,
                 bool merge, json_t *patch, json_t *warnings, int *ret_added) K8S_MUST_CHECK;

/* true when value references $(name) (honouring the $$ escape). */
bool wh_env_references(const char *value, const char *name);

#endif
