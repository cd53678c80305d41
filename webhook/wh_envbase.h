/*
 * wh_envbase — the injected variables that depend on the settings alone
 * (the fieldRefs, the collector, the endpoints, insecure): their values
 * and env entries written once per configuration, so that an admission
 * copies them instead of writing them (wh_config_finish keeps one in
 * cfg->env_base; a set builds its own when the settings changed since).
 *
 * Thread-safety: a base is read-only once built; any number of threads
 * may read it. Ownership: a base owns its values and entries; the
 * variables it lends (wh_envbase_vars) point into them and are valid until
 * wh_envbase_free. It borrows nothing from cfg but the settings'
 * pointers, kept to tell whether it still matches them (wh_envbase_of).
 * Failure: wh_envbase_new returns NULL when out of memory, nothing left
 * allocated.
 */
#ifndef WH_ENVBASE_H
#define WH_ENVBASE_H

#include "wh_config.h"
#include "wh_envtab.h"

struct wh_envbase;

/* New base for cfg's current settings, or NULL when out of memory. */
struct wh_envbase *wh_envbase_new(const struct wh_config *cfg);
/* NULL-safe. */
void wh_envbase_free(struct wh_envbase *base);

/* cfg->env_base when it was written for cfg's current settings (borrowed),
 * else NULL. */
const struct wh_envbase *wh_envbase_of(const struct wh_config *cfg);

/* The base's rows, by id (borrowed, valid with the base): finished
 * (value, entry, references) for the settings' rows; unset for the
 * per-pod rows (wh_envtab_per_pod), which a base does not write. */
const struct wh_env_var *wh_envbase_vars(const struct wh_envbase *base);

#endif
