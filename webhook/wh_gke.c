#include "wh_gke.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "k8s_gce.h"
#include "k8s_log.h"

#define TRY_MS  1000
#define RETRY_S 30

struct wh_gke {
    struct wh_config *cfg;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool started;
};

static bool try_once(struct wh_gke *g, bool log_failure)
{
    char *name = NULL;
    struct k8s_error err = {0};
    if (k8s_gce_cluster_name(TRY_MS, &name, &err) == 0) {
        k8s_log_json(K8S_LOG_INFO, "cluster name from the GKE metadata server",
                     json_pack("{s:s}", "cluster", name));
        wh_config_found_cluster(g->cfg, name);
        return true;
    }
    if (log_failure)
        k8s_log_json(K8S_LOG_WARN,
                     "cluster name unknown (no --cluster-name, CLUSTER_NAME or metadata server); "
                     "retrying in the background",
                     json_pack("{s:s}", "error", err.message));
    return false;
}

static void *retry_main(void *arg)
{
    struct wh_gke *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += RETRY_S;
        pthread_cond_timedwait(&g->cv, &g->mu, &until);
        if (g->stop)
            break;
        pthread_mutex_unlock(&g->mu);
        bool done = try_once(g, false);
        pthread_mutex_lock(&g->mu);
        if (done)
            break;
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int wh_gke_start(struct wh_config *cfg, struct wh_gke **ret)
{
    *ret = NULL;
    if (*wh_config_cluster(cfg))
        return 0;
    struct wh_gke *g = calloc(1, sizeof(*g));
    if (!g)
        return -K8S_ENOMEM;
    g->cfg = cfg;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    if (!try_once(g, true)) {
        if (pthread_create(&g->thread, NULL, retry_main, g) != 0) {
            wh_gke_free(g);
            return -K8S_EIO;
        }
        g->started = true;
    }
    *ret = g;
    return 0;
}

void wh_gke_free(struct wh_gke *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (g->started)
        pthread_join(g->thread, NULL);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}
