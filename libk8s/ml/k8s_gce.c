#include "k8s_gce.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_curl.h"

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    return k8s_buf_append(arg, p, size * n) == 0 ? size * n : 0;
}

/* One attribute; trailing whitespace trimmed. */
static int attribute(const char *host, const char *path, int64_t timeout_ms, char **ret,
                     struct k8s_error *reterr)
{
    char url[512];
    struct k8s_buf b;
    long status = 0;
    snprintf(url, sizeof(url), "http://%s/computeMetadata/v1/%s", host, path);
    k8s_buf_init(&b, 4096);
    CURL *h = k8s_curl.easy_init();
    struct curl_slist *hdr = k8s_curl.slist_append(NULL, "Metadata-Flavor: Google");
    if (!h || !hdr) {
        k8s_curl.slist_free_all(hdr);
        k8s_curl.easy_cleanup(h);
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    }
    k8s_curl.easy_setopt(h, CURLOPT_URL, url);
    k8s_curl.easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    k8s_curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    k8s_curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    k8s_curl.easy_setopt(h, CURLOPT_NOPROXY, "*");
    k8s_curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    k8s_curl.easy_setopt(h, CURLOPT_WRITEDATA, &b);
    CURLcode cc = k8s_curl.easy_perform(h);
    k8s_curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    k8s_curl.slist_free_all(hdr);
    k8s_curl.easy_cleanup(h);
    int r = 0;
    if (cc != CURLE_OK)
        r = k8s_error_set(reterr, cc == CURLE_OPERATION_TIMEDOUT ? -K8S_ETIMEDOUT : -K8S_EIO,
                          "GKE metadata server %s: %s", url, k8s_curl.easy_strerror(cc));
    else if (status != 200 || b.len == 0)
        r = k8s_error_set(reterr, -K8S_ENOTFOUND, "GKE metadata server %s: HTTP %ld", url, status);
    while (r == 0 && b.len && strchr(" \r\n\t", b.data[b.len - 1]))
        b.data[--b.len] = '\0';
    if (r == 0 && !(*ret = k8s_buf_take(&b, NULL)))
        r = -K8S_ENOMEM;
    k8s_buf_done(&b);
    return r;
}

int k8s_gce_cluster_name(int64_t timeout_ms, char **ret, struct k8s_error *reterr)
{
    int lr = k8s_curl_load(reterr);
    if (lr < 0)
        return lr;
    const char *host = getenv("GCE_METADATA_HOST");
    if (!host || !*host)
        host = "metadata.google.internal";
    char *name = NULL, *location = NULL, *project = NULL;
    int r = attribute(host, "instance/attributes/cluster-name", timeout_ms, &name, reterr);
    r = r ? r
          : attribute(host, "instance/attributes/cluster-location", timeout_ms, &location, reterr);
    r = r ? r : attribute(host, "project/project-id", timeout_ms, &project, reterr);
    if (r == 0 &&
        asprintf(ret, "projects/%s/locations/%s/clusters/%s", project, location, name) < 0)
        r = -K8S_ENOMEM;
    free(name);
    free(location);
    free(project);
    return r;
}
