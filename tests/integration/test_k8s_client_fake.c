/* The Kubernetes client library against the fake API server: requests and
 * their error mapping, paged lists and watches into a store, 429 with
 * Retry-After, token files re-read on a 401; a relist reporting what a gap
 * in the watch hid, a watch resumed after drops missing no event, a CRD
 * created (and deleted) after the watch started. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "k8s_client.h"
#include "k8s_store.h"
#include "k8s_time.h"
#include "k8s_watch.h"
#include "test_support.h"

static struct ts_fake fake;
static struct k8s_client *client;

static void command(const char *cmd)
{
    ts_fake_command(&fake, cmd);
}

static struct k8s_client *new_client(const char *token, const char *token_file)
{
    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", fake.port);
    struct k8s_config cfg = {
        .server = server, .token = (char *)token, .token_file = (char *)token_file};
    struct k8s_client *c = NULL;
    struct k8s_error err;
    cr_assert_eq(k8s_client_new(&cfg, &c, &err), 0, "%s", err.message);
    return c;
}

static void setup(void)
{
    ts_fake_start(&fake);
    client = new_client(NULL, NULL);
}

static void teardown(void)
{
    k8s_client_free(client);
    ts_fake_stop(&fake);
}

/* every wait is bounded by WAIT_BOUND_NS (below), which a failing test
 * must be able to reach and report */
TestSuite(k8s_client_fake, .init = setup, .fini = teardown, .timeout = 180);

#define JOBSETS "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets"

static json_t *jobset(const char *name)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:[]}}", "apiVersion",
                     "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata", "name", name,
                     "labels", "team", "a", "spec", "replicatedJobs");
}

Test(k8s_client_fake, get_create_conflict_and_not_found)
{
    json_t *ns = NULL, *made = NULL;
    struct k8s_error err;
    cr_assert_eq(k8s_get_json(client, "/api/v1/namespaces/ml", NULL, 5000, &ns, &err), 0, "%s",
                 err.message);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ns, "metadata"), "name")),
                     "ml");
    cr_assert_eq(k8s_get_json(client, JOBSETS "/nope", NULL, 5000, &made, &err), -K8S_ENOTFOUND);
    cr_assert_eq(err.http_status, 404);
    cr_assert_str_eq(err.reason, "NotFound");
    json_t *js = jobset("train");
    cr_assert_eq(k8s_send_json(client, "POST", JOBSETS, NULL, js, 5000, &made, &err), 0, "%s",
                 err.message);
    cr_assert_not_null(json_object_get(json_object_get(made, "metadata"), "resourceVersion"));
    cr_assert_eq(k8s_send_json(client, "POST", JOBSETS, NULL, js, 5000, NULL, &err),
                 -K8S_ECONFLICT);
    cr_assert_str_eq(err.reason, "AlreadyExists");
    cr_assert(strstr(err.message, "train"), "the server's message is kept: %s", err.message);
    json_decref(js);
    json_decref(made);
    json_decref(ns);
}

Test(k8s_client_fake, optimistic_concurrency_patches_and_status)
{
    json_t *js = jobset("opt"), *made = NULL, *again = NULL;
    struct k8s_error err;
    cr_assert_eq(k8s_send_json(client, "POST", JOBSETS, NULL, js, 5000, &made, &err), 0);
    json_t *stale = json_deep_copy(made);
    json_object_set_new(json_object_get(made, "spec"), "suspend", json_true());
    cr_assert_eq(k8s_send_json(client, "PUT", JOBSETS "/opt", NULL, made, 5000, &again, &err), 0,
                 "%s", err.message);
    cr_assert_eq(k8s_send_json(client, "PUT", JOBSETS "/opt", NULL, stale, 5000, NULL, &err),
                 -K8S_ECONFLICT, "a stale resourceVersion is a conflict");
    cr_assert(strstr(err.message, "has been modified"), "%s", err.message);
    json_t *merge = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "stage", "2");
    cr_assert_eq(
        k8s_send_json(client, "PATCH", JOBSETS "/opt", K8S_PATCH_MERGE, merge, 5000, NULL, &err), 0,
        "%s", err.message);
    json_t *bad =
        json_pack("[{s:s, s:s, s:s}]", "op", "test", "path", "/metadata/name", "value", "other");
    cr_assert_eq(
        k8s_send_json(client, "PATCH", JOBSETS "/opt", K8S_PATCH_JSON, bad, 5000, NULL, &err),
        -K8S_EINVALID);
    json_t *status = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind",
        "JobSet", "metadata", "name", "opt", "resourceVersion",
        json_string_value(json_object_get(json_object_get(again, "metadata"), "resourceVersion")),
        "status", "phase", "Running");
    cr_assert_eq(
        k8s_send_json(client, "PUT", JOBSETS "/opt/status", NULL, status, 5000, NULL, &err),
        -K8S_ECONFLICT, "the merge patch moved the version on");
    json_t *now = NULL;
    cr_assert_eq(k8s_get_json(client, JOBSETS "/opt", NULL, 5000, &now, &err), 0);
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(now, "metadata"), "labels"), "stage")),
                     "2");
    json_decref(now);
    json_decref(status);
    json_decref(bad);
    json_decref(merge);
    json_decref(stale);
    json_decref(again);
    json_decref(made);
    json_decref(js);
}

Test(k8s_client_fake, throttling_keeps_retry_after)
{
    json_t *v = NULL;
    struct k8s_error err;
    command("fail 1 429 2");
    cr_assert_eq(k8s_get_json(client, "/api/v1/namespaces/ml", NULL, 5000, &v, &err),
                 -K8S_ETHROTTLED);
    cr_assert_eq(err.retry_after_s, 2);
    cr_assert(strstr(err.message, "Too many requests"), "%s", err.message);
    cr_assert_eq(k8s_get_json(client, "/api/v1/namespaces/ml", NULL, 5000, &v, &err), 0);
    json_decref(v);
}

Test(k8s_client_fake, token_file_reread_after_401)
{
    char path[] = "/tmp/mld-token-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0 && write(fd, "one\n", 4) == 4);
    close(fd);
    command("tokens one");
    struct k8s_client *c = new_client(NULL, path);
    json_t *v = NULL;
    struct k8s_error err;
    cr_assert_eq(k8s_get_json(c, "/api/v1/namespaces/ml", NULL, 5000, &v, &err), 0, "%s",
                 err.message);
    json_decref(v);
    FILE *f = fopen(path, "w");
    fputs("two\n", f);
    fclose(f);
    command("tokens two");
    cr_assert_eq(k8s_get_json(c, "/api/v1/namespaces/ml", NULL, 5000, &v, &err), 0,
                 "a 401 re-reads the token file: %s", err.message);
    json_decref(v);
    command("tokens -");
    k8s_client_free(c);
    unlink(path);
}

/* The watches here back off at most BACKOFF_MAX_MS and retry an absent
 * collection every ABSENT_MS or sooner, so whatever they promise holds
 * within one retry of each plus one list request: the bound of every wait
 * below, which only a failing run ever reaches. */
#define BACKOFF_MAX_MS 200
#define ABSENT_MS      300
#define WAIT_BOUND_NS  ((int64_t)(BACKOFF_MAX_MS + ABSENT_MS + K8S_WATCH_LIST_TIMEOUT_MS) * 1000000)

/* Poll cond(ud) until it holds (0) or the bound passed (-1). */
static int wait_until(bool (*cond)(void *ud, long n), void *ud, long n)
{
    int64_t deadline = k8s_mono_ns() + WAIT_BOUND_NS;
    while (!cond(ud, n)) {
        if (k8s_mono_ns() > deadline)
            return -1;
        usleep(10 * 1000);
    }
    return 0;
}

static bool size_is(void *s, long n)
{
    return k8s_store_size(s) == (size_t)n;
}

static bool synced(void *w, long n)
{
    (void)n;
    return k8s_watch_synced(w);
}

static int wait_size(struct k8s_store *s, size_t n)
{
    return wait_until(size_is, s, (long)n);
}

Test(k8s_client_fake, watch_fills_the_store_and_survives_drops)
{
    struct k8s_store *s = k8s_store_new();
    struct k8s_watch *w = NULL;
    struct k8s_watch_spec spec = {.resource = "jobsets",
                                  .path = "/apis/jobset.x-k8s.io/v1alpha2/jobsets",
                                  .metadata_only = true,
                                  .backoff_initial_ms = 50,
                                  .backoff_max_ms = BACKOFF_MAX_MS};
    struct k8s_error err;
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "pre-%d", i);
        json_t *js = jobset(name);
        cr_assert_eq(k8s_send_json(client, "POST", JOBSETS, NULL, js, 5000, NULL, &err), 0);
        json_decref(js);
    }
    cr_assert_eq(k8s_watch_start(client, &spec, s, NULL, &w), 0);
    cr_assert_eq(wait_until(synced, w, 0), 0);
    cr_assert_eq(k8s_store_size(s), 3, "synced only once the store holds the first list");
    json_t *js = jobset("live");
    cr_assert_eq(k8s_send_json(client, "POST", JOBSETS, NULL, js, 5000, NULL, &err), 0);
    cr_assert_eq(wait_size(s, 4), 0, "the watch adds");
    command("drop");
    json_decref(js);
    js = jobset("after-drop");
    cr_assert_eq(k8s_send_json(client, "POST", JOBSETS, NULL, js, 5000, NULL, &err), 0);
    cr_assert_eq(wait_size(s, 5), 0, "watched again after the drop");
    json_t *opts = json_object();
    cr_assert_eq(k8s_send_json(client, "DELETE", JOBSETS "/pre-0", NULL, opts, 5000, NULL, &err), 0,
                 "%s", err.message);
    json_decref(opts);
    cr_assert_eq(wait_size(s, 4), 0, "the watch deletes");
    json_t *meta = k8s_store_get(s, "ml", "live");
    cr_assert_not_null(meta);
    cr_assert_null(json_object_get(meta, "spec"), "metadata only");
    json_decref(meta);
    json_decref(js);
    k8s_watch_free(w);
    k8s_store_free(s);
}

/* What a watch's hooks were told (from its thread; read under mu). */
struct seen {
    pthread_mutex_t mu;
    int changed, listed, nrelisted;
    char relisted[32][80];   /* "ADDED ml/a" */
    struct k8s_watch *w;     /* set once started: the hooks read its flags */
    int stored_while_absent; /* relisted objects reported while absent read true */
};

static void seen_changed(void *ud, enum k8s_watch_event_type ev, const json_t *obj)
{
    (void)ev;
    (void)obj;
    struct seen *s = ud;
    pthread_mutex_lock(&s->mu);
    s->changed++;
    pthread_mutex_unlock(&s->mu);
}

static void seen_listed(void *ud)
{
    struct seen *s = ud;
    pthread_mutex_lock(&s->mu);
    s->listed++;
    pthread_mutex_unlock(&s->mu);
}

static void seen_relisted(void *ud, enum k8s_watch_event_type ev, const char *key,
                          const json_t *obj)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED"};
    struct seen *s = ud;
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), "v"));
    pthread_mutex_lock(&s->mu);
    /* the hook runs once the store holds the list: absent must read false */
    if (ev != K8S_EV_DELETED && s->w && k8s_watch_absent(s->w))
        s->stored_while_absent++;
    if (s->nrelisted < 32)
        snprintf(s->relisted[s->nrelisted++], sizeof(s->relisted[0]), "%s %s%s%s", names[ev], key,
                 v ? " v=" : "", v ? v : "");
    pthread_mutex_unlock(&s->mu);
}

static int seen_count(struct seen *s, const int *field)
{
    pthread_mutex_lock(&s->mu);
    int n = *field;
    pthread_mutex_unlock(&s->mu);
    return n;
}

struct count_of {
    struct seen *s;
    const int *field;
};

static bool count_reached(void *ud, long n)
{
    struct count_of *c = ud;
    return seen_count(c->s, c->field) >= n;
}

static int wait_count(struct seen *s, const int *field, int n)
{
    struct count_of c = {s, field};
    return wait_until(count_reached, &c, n);
}

static bool relisted_has(struct seen *s, const char *what)
{
    bool found = false;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->nrelisted && !found; i++)
        found = !strcmp(s->relisted[i], what);
    pthread_mutex_unlock(&s->mu);
    return found;
}

static bool reported(void *s, long what)
{
    return relisted_has(s, (const char *)what);
}

/* The relisted hook runs after the store was replaced: wait for the report
 * itself, not for the store. */
static int wait_relisted(struct seen *s, const char *what)
{
    return wait_until(reported, s, (long)what);
}

static struct k8s_watch *watch_jobsets(struct k8s_store *s, struct seen *seen, int64_t absent_ms)
{
    struct k8s_watch_spec spec = {.resource = "jobsets",
                                  .path = "/apis/jobset.x-k8s.io/v1alpha2/jobsets",
                                  .metadata_only = true,
                                  .absent_retry_ms = absent_ms,
                                  .backoff_initial_ms = 50,
                                  .backoff_max_ms = BACKOFF_MAX_MS};
    struct k8s_watch_hooks hooks = {
        .changed = seen_changed, .listed = seen_listed, .relisted = seen_relisted, .ud = seen};
    struct k8s_watch *w = NULL;
    cr_assert_eq(k8s_watch_start(client, &spec, s, &hooks, &w), 0);
    pthread_mutex_lock(&seen->mu);
    seen->w = w;
    pthread_mutex_unlock(&seen->mu);
    return w;
}

Test(k8s_client_fake, a_relist_delivers_what_the_gap_in_the_watch_hid)
{
    struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct k8s_store *s = k8s_store_new();
    command("jobset create a");
    command("jobset create b");
    command("jobset create c");
    struct k8s_watch *w = watch_jobsets(s, &seen, 0);
    cr_assert_eq(wait_count(&seen, &seen.listed, 1), 0);
    cr_assert_eq(seen_count(&seen, &seen.nrelisted), 3, "the first list adds everything");
    cr_assert(relisted_has(&seen, "ADDED ml/a") && relisted_has(&seen, "ADDED ml/c"));
    /* a gap: nothing can connect while b goes, c changes and d comes, and
     * the history the watch would resume from is compacted away */
    command("refuse 1");
    command("jobset delete b");
    command("jobset label c v2");
    command("jobset create d");
    command("compact");
    usleep(300 * 1000);
    command("refuse 0");
    cr_assert_eq(wait_count(&seen, &seen.listed, 2), 0, "410 → listed again");
    cr_assert_eq(seen_count(&seen, &seen.nrelisted), 6, "exactly the three differences");
    cr_assert(relisted_has(&seen, "DELETED ml/b"), "the removal, with the object as it was");
    cr_assert(relisted_has(&seen, "MODIFIED ml/c v=v2"), "the change, with the new form");
    cr_assert(relisted_has(&seen, "ADDED ml/d"));
    cr_assert_eq(k8s_store_size(s), 3);
    cr_assert_null(k8s_store_get(s, "ml", "b"));
    k8s_watch_free(w);
    k8s_store_free(s);
}

Test(k8s_client_fake, a_watch_resumed_after_drops_misses_no_event)
{
    struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct k8s_store *s = k8s_store_new();
    command("bookmarks 0.02"); /* bookmarks between the events move the RV on too */
    struct k8s_watch *w = watch_jobsets(s, &seen, 0);
    cr_assert_eq(wait_count(&seen, &seen.listed, 1), 0);
    char cmd[64];
    for (int i = 0; i < 40; i++) {
        snprintf(cmd, sizeof(cmd), "jobset create j%d", i);
        command(cmd);
        if (i % 5 == 4)
            command("drop");
    }
    for (int i = 0; i < 40; i++) {
        snprintf(cmd, sizeof(cmd), "jobset label j%d done", i);
        command(cmd);
        if (i % 3 == 2)
            command("drop");
        if (i % 7 == 6)
            usleep(60 * 1000);
    }
    cr_assert_eq(wait_count(&seen, &seen.changed, 80), 0, "every event: %d",
                 seen_count(&seen, &seen.changed));
    usleep(200 * 1000);
    cr_assert_eq(seen_count(&seen, &seen.changed), 80, "each exactly once");
    cr_assert_eq(k8s_watch_lists(w), 1, "resumed from its resourceVersion, never relisted");
    cr_assert_eq(k8s_store_size(s), 40);
    for (int i = 0; i < 40; i++) {
        char name[8];
        snprintf(name, sizeof(name), "j%d", i);
        json_t *o = k8s_store_get(s, "ml", name);
        const char *v = json_string_value(
            json_object_get(json_object_get(json_object_get(o, "metadata"), "labels"), "v"));
        cr_assert_str_eq(v ? v : "", "done", "%s", name);
        json_decref(o);
    }
    k8s_watch_free(w);
    k8s_store_free(s);
}

Test(k8s_client_fake, a_crd_created_later_is_watched_within_the_absent_retry)
{
    struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct k8s_store *s = k8s_store_new();
    command("unregister jobset.x-k8s.io v1alpha2 jobsets");
    struct k8s_watch *w = watch_jobsets(s, &seen, ABSENT_MS);
    cr_assert_eq(wait_until(synced, w, 0), 0);
    cr_assert(k8s_watch_absent(w), "absent: empty and synced");
    command("register jobset.x-k8s.io v1alpha2 jobsets JobSet");
    command("jobset create late");
    cr_assert_eq(wait_size(s, 1), 0, "listed once its CRD is served");
    cr_assert_not(k8s_watch_absent(w), "an object is stored: absent was cleared before");
    cr_assert_eq(wait_relisted(&seen, "ADDED ml/late"), 0);
    cr_assert_eq(seen_count(&seen, &seen.stored_while_absent), 0,
                 "no stored object was visible while the collection read absent");
    command("jobset create later");
    cr_assert_eq(wait_size(s, 2), 0, "and watched");
    command("unregister jobset.x-k8s.io v1alpha2 jobsets");
    cr_assert_eq(wait_size(s, 0), 0, "the CRD deleted: empty again");
    cr_assert_eq(wait_relisted(&seen, "DELETED ml/later"), 0, "its objects are reported gone");
    k8s_watch_free(w);
    k8s_store_free(s);
}

Test(k8s_client_fake, failing_lists_back_off_and_retry_until_they_work)
{
    struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct k8s_store *s = k8s_store_new();
    command("jobset create a");
    command("fail 6 503");
    command("fail 2 429 1");
    int64_t t0 = k8s_mono_ns();
    struct k8s_watch *w = watch_jobsets(s, &seen, 0);
    cr_assert_eq(wait_count(&seen, &seen.listed, 1), 0, "listed in the end");
    cr_assert_geq(k8s_watch_failures(w), 8, "every failure was retried");
    cr_assert_geq(k8s_mono_ns() - t0, 2 * K8S_NSEC_PER_SEC, "each 429 waited its Retry-After");
    cr_assert(relisted_has(&seen, "ADDED ml/a"));
    k8s_watch_free(w);
    k8s_store_free(s);
}
