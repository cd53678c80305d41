#include "k8s_curl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

struct k8s_curl_api k8s_curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_result;
static char load_error[256];

#define RESOLVE(field, sym)                                                                        \
    do {                                                                                           \
        *(void **)&k8s_curl.field = dlsym(lib, sym);                                               \
        if (!k8s_curl.field)                                                                       \
            missing = sym;                                                                         \
    } while (0)

static void load(void)
{
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    const char *missing = NULL;
    if (!lib) {
        snprintf(load_error, sizeof(load_error), "cannot load libcurl.so.4: %s", dlerror());
        load_result = -K8S_EIO;
        return;
    }
    RESOLVE(easy_init, "curl_easy_init");
    RESOLVE(easy_cleanup, "curl_easy_cleanup");
    RESOLVE(easy_reset, "curl_easy_reset");
    RESOLVE(easy_setopt, "curl_easy_setopt");
    RESOLVE(easy_perform, "curl_easy_perform");
    RESOLVE(easy_getinfo, "curl_easy_getinfo");
    RESOLVE(easy_pause, "curl_easy_pause");
    RESOLVE(easy_strerror, "curl_easy_strerror");
    RESOLVE(easy_escape, "curl_easy_escape");
    RESOLVE(free, "curl_free");
    RESOLVE(slist_append, "curl_slist_append");
    RESOLVE(slist_free_all, "curl_slist_free_all");
    RESOLVE(multi_init, "curl_multi_init");
    RESOLVE(multi_add_handle, "curl_multi_add_handle");
    RESOLVE(multi_remove_handle, "curl_multi_remove_handle");
    RESOLVE(multi_perform, "curl_multi_perform");
    RESOLVE(multi_socket_action, "curl_multi_socket_action");
    RESOLVE(multi_poll, "curl_multi_poll");
    RESOLVE(multi_wakeup, "curl_multi_wakeup");
    RESOLVE(multi_info_read, "curl_multi_info_read");
    RESOLVE(multi_setopt, "curl_multi_setopt");
    RESOLVE(multi_cleanup, "curl_multi_cleanup");
    CURLcode (*global_init)(long) = NULL;
    *(void **)&global_init = dlsym(lib, "curl_global_init");
    if (missing || !global_init) {
        snprintf(load_error, sizeof(load_error), "libcurl.so.4 lacks %s",
                 missing ? missing : "curl_global_init");
        load_result = -K8S_EIO;
        return;
    }
    if (global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(load_error, sizeof(load_error), "curl_global_init failed");
        load_result = -K8S_EIO;
    }
}

int k8s_curl_load(struct k8s_error *reterr)
{
    pthread_once(&once, load);
    if (load_result < 0)
        return k8s_error_set(reterr, load_result, "%s", load_error);
    return 0;
}
