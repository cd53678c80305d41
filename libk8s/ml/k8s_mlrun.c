#include "k8s_mlrun.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "k8s_buf.h"
#include "k8s_time.h"

#define IDENTIFIER "GKE_DIAGON_IDENTIFIER"
#define METADATA   "GKE_DIAGON_METADATA"

const struct k8s_mlrun_field_info k8s_mlrun_fields[K8S_MLRUN_NFIELDS] = {
    [K8S_MLRUN_NAMESPACE] = {"namespace", IDENTIFIER, "namespace"},
    [K8S_MLRUN_CLUSTER] = {"clustername", IDENTIFIER, "cluster"},
    [K8S_MLRUN_KIND] = {"metadata.kind", IDENTIFIER, "kind"},
    [K8S_MLRUN_NAME] = {"metadata.name", IDENTIFIER, "id"},
    [K8S_MLRUN_CREATED] = {"creation-timestamp", METADATA, "creation-timestamp"},
};

_Static_assert(K8S_MLRUN_NFIELDS <= 8 * sizeof(unsigned), "a bit per field");

/* The field's value, or NULL when the SDK would call it missing. */
static const char *field(const json_t *ident, const json_t *meta, enum k8s_mlrun_field f)
{
    const json_t *o = strcmp(k8s_mlrun_fields[f].var, IDENTIFIER) ? meta : ident;
    const char *v = json_string_value(json_object_get(o, k8s_mlrun_fields[f].key));
    return v && *v ? v : NULL;
}

static unsigned missing_in(const json_t *ident, const json_t *meta)
{
    unsigned mask = 0;
    for (int f = 0; f < K8S_MLRUN_NFIELDS; f++)
        if (!field(ident, meta, (enum k8s_mlrun_field)f))
            mask |= 1u << f;
    return mask;
}

unsigned k8s_mlrun_missing(const char *identifier_json, const char *metadata_json)
{
    json_t *ident = identifier_json ? json_loads(identifier_json, 0, NULL) : NULL;
    json_t *meta = metadata_json ? json_loads(metadata_json, 0, NULL) : NULL;
    unsigned mask = missing_in(ident, meta);
    json_decref(ident);
    json_decref(meta);
    return mask;
}

void k8s_mlrun_names(unsigned mask, bool sdk_names, char *out, size_t cap)
{
    size_t len = 0;
    if (cap)
        out[0] = '\0';
    for (int f = 0; f < K8S_MLRUN_NFIELDS && len < cap; f++) {
        if (!(mask & (1u << f)))
            continue;
        const char *name = sdk_names ? k8s_mlrun_fields[f].sdk : k8s_mlrun_fields[f].key;
        len += k8s_strjoin(out + len, cap - len, len ? ", " : "", name, NULL);
    }
}

const char *k8s_mlrun_cluster_short(const char *cluster)
{
    const char *slash = strrchr(cluster, '/');
    return slash ? slash + 1 : cluster;
}

/* The SDK drops the last character (the "Z"), appends "+00:00" and reads
 * the rest as an ISO time: so what precedes the last character must be a
 * date and time without an offset. */
static int stamp(const char *created, char out[static 16])
{
    char utc[64];
    size_t n = strlen(created);
    time_t t;
    if (n < 2 || n >= sizeof(utc))
        return -K8S_EINVAL;
    memcpy(utc, created, n - 1);
    utc[n - 1] = 'Z';
    utc[n] = '\0';
    struct tm tm;
    if (k8s_time_parse_rfc3339(utc, &t) < 0 || !gmtime_r(&t, &tm))
        return -K8S_EINVAL;
    return strftime(out, 16, "%Y%m%d-%H%M%S", &tm) == 15 ? 0 : -K8S_EINVAL;
}

int k8s_mlrun_id(const char *cluster, const char *ns, const char *kind, const char *name,
                 const char *created, char out[static K8S_MLRUN_ID_SIZE])
{
    char ts[16];
    out[0] = '\0';
    if (!*cluster || !*ns || !*kind || !*name || stamp(created, ts) < 0)
        return -K8S_EINVAL;
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 16);
    int r = k8s_buf_cat(&b, k8s_mlrun_cluster_short(cluster), "_", ns, "_", kind, "_", name, "_",
                        ts, NULL);
    if (r == 0)
        k8s_sha256_hex(b.data, b.len, out);
    k8s_buf_done(&b);
    return r;
}

int k8s_mlrun_id_json(const char *identifier_json, const char *metadata_json,
                      char out[static K8S_MLRUN_ID_SIZE])
{
    json_t *ident = json_loads(identifier_json, 0, NULL);
    json_t *meta = json_loads(metadata_json, 0, NULL);
    int r = -K8S_EINVAL;
    out[0] = '\0';
    if (!missing_in(ident, meta))
        r = k8s_mlrun_id(field(ident, meta, K8S_MLRUN_CLUSTER),
                         field(ident, meta, K8S_MLRUN_NAMESPACE),
                         field(ident, meta, K8S_MLRUN_KIND), field(ident, meta, K8S_MLRUN_NAME),
                         field(ident, meta, K8S_MLRUN_CREATED), out);
    json_decref(ident);
    json_decref(meta);
    return r;
}
