#include "wh_envbase.h"

#include <stdbool.h>
#include <stdlib.h>

#include "k8s_buf.h"

struct wh_envbase {
    /* the settings it was written for (borrowed pointers, compared) */
    const char *collector_name, *collector_namespace, *cluster_domain;
    struct wh_env_var v[WH_ENV_COUNT]; /* by id; only the rows that are not per_pod */
    char *values, *entries;
};

void wh_envbase_free(struct wh_envbase *base)
{
    if (!base)
        return;
    free(base->values);
    free(base->entries);
    free(base);
}

/* The settings' rows' values, each NUL-terminated, into values; where
 * each begins in at[]. */
static int write_values(struct wh_envbase *base, const struct wh_config *cfg,
                        struct k8s_buf *values, size_t at[])
{
    struct wh_envtab_in in = {.cfg = cfg};
    int r = 0;
    for (int j = 0; j < WH_ENV_COUNT && r == 0; j++) {
        if (wh_envtab_per_pod((enum wh_env_id)j))
            continue;
        wh_env_var_init(&base->v[j], (enum wh_env_id)j);
        at[j] = values->len;
        r = wh_envtab_write_value((enum wh_env_id)j, &in, values);
    }
    return r;
}

/* Their entries into entries (write_var reads the values); where each
 * begins in at[]. */
static int write_entries(struct wh_envbase *base, const struct k8s_buf *values, const size_t vat[],
                         struct k8s_buf *entries, size_t at[])
{
    int r = 0;
    for (int j = 0; j < WH_ENV_COUNT && r == 0; j++) {
        if (wh_envtab_per_pod((enum wh_env_id)j))
            continue;
        if (!base->v[j].field_path)
            base->v[j].value = values->data + vat[j];
        at[j] = entries->len;
        r = wh_env_var_write(&base->v[j], entries);
        base->v[j].entry_len = entries->len - at[j];
    }
    return r;
}

struct wh_envbase *wh_envbase_new(const struct wh_config *cfg)
{
    struct wh_envbase *base = calloc(1, sizeof(*base));
    if (!base)
        return NULL;
    *base = (struct wh_envbase){.collector_name = cfg->otel_collector_name,
                                .collector_namespace = cfg->otel_collector_namespace,
                                .cluster_domain = cfg->cluster_domain};
    struct k8s_buf values, entries;
    k8s_buf_init(&values, 1 << 24);
    k8s_buf_init(&entries, 1 << 24);
    size_t vat[WH_ENV_COUNT], eat[WH_ENV_COUNT];
    int r = write_values(base, cfg, &values, vat);
    r = r ? r : write_entries(base, &values, vat, &entries, eat);
    base->values = k8s_buf_take(&values, NULL);
    base->entries = k8s_buf_take(&entries, NULL);
    for (int j = 0; j < WH_ENV_COUNT && r == 0 && base->values && base->entries; j++)
        if (!wh_envtab_per_pod((enum wh_env_id)j))
            wh_env_var_point(&base->v[j], base->values, vat[j], base->entries, eat[j]);
    if (r < 0 || !base->values || !base->entries) {
        wh_envbase_free(base);
        return NULL;
    }
    return base;
}

const struct wh_envbase *wh_envbase_of(const struct wh_config *cfg)
{
    const struct wh_envbase *base = cfg->env_base;
    bool same = base && base->collector_name == cfg->otel_collector_name &&
                base->collector_namespace == cfg->otel_collector_namespace &&
                base->cluster_domain == cfg->cluster_domain;
    return same ? base : NULL;
}

const struct wh_env_var *wh_envbase_vars(const struct wh_envbase *base)
{
    return base->v;
}
