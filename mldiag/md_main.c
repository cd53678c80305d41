/*
 * kubectl-mldiag — the kubectl plugin for on-demand profile captures:
 *   kubectl mldiag capture TYPE/NAME --storage gs://... [--duration 10s] [--wait] ...
 *   kubectl mldiag list [-A]
 *   kubectl mldiag status NAME
 * It creates and reads MLDiagnosticsConnections with the user's kubeconfig
 * and RBAC (kubectl's precedence: --kubeconfig, $KUBECONFIG, ~/.kube/config,
 * then the in-cluster service account), in --namespace/-n or the
 * context's namespace. Exit status: 0; 1 when a capture failed or the
 * API server refused; 2 for a usage error.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "k8s_client.h"
#include "k8s_config.h"
#include "k8s_flags.h"
#include "k8s_jget.h"
#include "k8s_time.h"
#include "md_capture.h"
#include "md_show.h"

#define PATH_FMT "/apis/diagon.gke.io/v1alpha1/namespaces/%s/mldiagnosticsconnections"

struct opts {
    const char *kubeconfig, *context, *namespace;
    bool all_namespaces, wait;
    int64_t timeout_ns, poll_ns;
    struct md_capture c;
};

#define COMMON_FLAGS                                                                               \
    {"kubeconfig", K8S_FLAG_STRING, K8S_FLAG_AT(struct opts, kubeconfig),                          \
     "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)"},                   \
        {"context", K8S_FLAG_STRING, K8S_FLAG_AT(struct opts, context),                            \
         "the kubeconfig context to use (default: its current context)"},                          \
        {"namespace", K8S_FLAG_STRING, K8S_FLAG_AT(struct opts, namespace),                        \
         "the namespace (default: the context's, else default)"},                                  \
    {                                                                                              \
        "n", K8S_FLAG_STRING, K8S_FLAG_AT(struct opts, namespace), "short for --namespace"         \
    }

#define C(member) K8S_FLAG_AT(struct opts, c.member)

static const struct k8s_flag capture_flags[] = {
    COMMON_FLAGS,
    {"storage", K8S_FLAG_STRING, C(storage),
     "where the profiles go: gs://bucket/path or an absolute path inside the pods (required)"},
    {"duration", K8S_FLAG_DURATION, C(duration_ns), "how long to capture (whole seconds)",
     K8S_NSEC_PER_SEC, 86400 * K8S_NSEC_PER_SEC},
    {"port", K8S_FLAG_INT, C(port), "the profiler server's port in the pods", 1, 65535},
    {"name", K8S_FLAG_STRING, C(name), "the capture's name (default: <target>-<unix time>)"},
    {"hosts", K8S_FLAG_STRING, C(indices), "a workload's hosts by index, e.g. 0-3,8"},
    {"replicated-jobs", K8S_FLAG_STRING, C(replicated_jobs),
     "a workload's hosts by role, e.g. workers (JobSet), leader, head, master"},
    {"selector", K8S_FLAG_STRING, C(selector), "a workload's hosts by label, e.g. tier=a,x=y"},
    {"max", K8S_FLAG_INT, C(max), "at most this many hosts, the first by index (default: all)", 1,
     1000000, K8S_FLAG_NO_DEFAULT},
    {"host-tracer-level", K8S_FLAG_INT, C(host_level),
     "0 off, 1 TraceMe, 2 + high-level execution, 3 verbose (default 2)", 0, 3,
     K8S_FLAG_NO_DEFAULT},
    {"device-tracer-level", K8S_FLAG_INT, C(device_level), "TPU/GPU tracing, 0 or 1 (default 1)", 0,
     1, K8S_FLAG_NO_DEFAULT},
    {"python-tracer-level", K8S_FLAG_INT, C(python_level), "Python calls, 0 or 1 (default 1)", 0, 1,
     K8S_FLAG_NO_DEFAULT},
    {"delay", K8S_FLAG_DURATION, C(delay_ns),
     "start every host at least this much later (default: as soon as all are connected)", 0,
     3600 * K8S_NSEC_PER_SEC, K8S_FLAG_NO_DEFAULT},
    {"wait", K8S_FLAG_BOOL, K8S_FLAG_AT(struct opts, wait),
     "follow the capture, per host, until it ends; exit 1 if it fails"},
    {"timeout", K8S_FLAG_DURATION, K8S_FLAG_AT(struct opts, timeout_ns),
     "with --wait, give up after this long (0: the duration plus 10m)"},
    {NULL}};

static const struct k8s_flag list_flags[] = {
    COMMON_FLAGS,
    {"all-namespaces", K8S_FLAG_BOOL, K8S_FLAG_AT(struct opts, all_namespaces),
     "list the captures of every namespace"},
    {"A", K8S_FLAG_BOOL, K8S_FLAG_AT(struct opts, all_namespaces), "short for --all-namespaces"},
    {NULL}};

static const struct k8s_flag status_flags[] = {COMMON_FLAGS, {NULL}};

static const char usage[] =
    "Capture profiles from the JAX profilers of a workload's pods, and follow them.\n"
    "\n"
    "Usage:\n"
    "  kubectl mldiag capture TYPE/NAME --storage LOCATION [flags]\n"
    "  kubectl mldiag list [-A] [flags]\n"
    "  kubectl mldiag status NAME [flags]\n"
    "  kubectl mldiag version\n"
    "\n"
    "Examples:\n"
    "  # Capture 10 seconds of every host of a JobSet and wait for the profiles\n"
    "  kubectl mldiag capture jobset/llama --storage gs://my-bucket/llama --wait\n"
    "\n"
    "  # Only the first four workers, without Python tracing\n"
    "  kubectl mldiag capture jobset/llama --replicated-jobs workers --max 4 \\\n"
    "      --python-tracer-level 0 --storage gs://my-bucket/llama --duration 30s --wait\n"
    "\n"
    "  # Two pods by name, into a folder inside the pods\n"
    "  kubectl mldiag capture pod/w-0,w-1 --storage /data/profiles -n ml\n"
    "\n"
    "Use \"kubectl mldiag COMMAND --help\" for a command's flags.\n";

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

/* Flags anywhere among the positional arguments, as kubectl takes them:
 * the positionals into pos[] (at most max). 1 for --help. */
static int parse(const struct k8s_flag *flags, struct opts *o, int argc, char **argv,
                 const char **pos, int max, int *npos, struct k8s_error *err)
{
    int argi = 2;
    *npos = 0;
    while (argi < argc) {
        int r = k8s_flags_parse(flags, o, argc, argv, &argi, err);
        if (r != 0)
            return r;
        if (argi >= argc)
            break;
        if (*npos == max)
            return k8s_error_set(err, -K8S_EINVAL, "unexpected argument \"%s\"", argv[argi]);
        pos[(*npos)++] = argv[argi++];
    }
    return 0;
}

/* kubectl's order: --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster. */
static int open_client(const struct opts *o, struct k8s_client **ret, struct k8s_config *cfg,
                       struct k8s_error *err)
{
    const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
    char path[1024] = "";
    if (o->kubeconfig && *o->kubeconfig)
        snprintf(path, sizeof(path), "%s", o->kubeconfig);
    else if (env && *env)
        snprintf(path, sizeof(path), "%.*s", (int)strcspn(env, ":"), env);
    else if (home)
        snprintf(path, sizeof(path), "%s/.kube/config", home);
    int r = *path && (o->kubeconfig || access(path, R_OK) == 0)
                ? k8s_config_from_kubeconfig(path, o->context, cfg, err)
                : k8s_config_in_cluster(K8S_SERVICEACCOUNT_DIR, cfg, err);
    if (r < 0)
        return r;
    r = k8s_client_new(cfg, ret, err);
    if (r < 0)
        k8s_config_done(cfg);
    return r;
}

static const char *namespace_of(const struct opts *o, const struct k8s_config *cfg)
{
    if (o->namespace && *o->namespace)
        return o->namespace;
    return cfg->namespace && *cfg->namespace ? cfg->namespace : "default";
}

/* Follow the capture until it ends; its outcome's exit status. */
static int follow(struct k8s_client *cl, const struct opts *o, const char *path)
{
    json_t *prev = NULL;
    int64_t limit = o->timeout_ns ? o->timeout_ns : o->c.duration_ns + 600 * K8S_NSEC_PER_SEC;
    int64_t end = k8s_mono_ns() + limit;
    for (;;) {
        json_t *obj = NULL;
        struct k8s_error err = {0};
        if (k8s_get_json(cl, path, NULL, 10000, &obj, &err) < 0) {
            fprintf(stderr, "error: %s\n", err.message);
            json_decref(prev);
            return 1;
        }
        md_show_progress(stdout, prev, obj);
        fflush(stdout);
        json_decref(prev);
        prev = obj;
        int r = md_show_outcome(stdout, stderr, obj);
        if (r >= 0) {
            json_decref(prev);
            return r;
        }
        if (k8s_mono_ns() > end) {
            char t[32];
            k8s_duration_format(limit, t);
            fprintf(stderr, "error: still not finished after %s (--timeout)\n", t);
            json_decref(prev);
            return 1;
        }
        struct timespec ts = {o->poll_ns / K8S_NSEC_PER_SEC, o->poll_ns % K8S_NSEC_PER_SEC};
        nanosleep(&ts, NULL);
    }
}

static int capture(struct k8s_client *cl, struct opts *o, const char *ns, const char *arg)
{
    struct k8s_error err = {0};
    json_t *obj = NULL, *made = NULL;
    o->c.namespace = ns;
    if (md_target_parse(arg, &o->c.target, &err) < 0 ||
        md_capture_build(&o->c, now_s(), &obj, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.message);
        return 2;
    }
    char path[600];
    snprintf(path, sizeof(path), PATH_FMT, ns);
    int r = k8s_send_json(cl, "POST", path, NULL, obj, 30000, &made, &err);
    json_decref(obj);
    if (r < 0) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    char name[256];
    snprintf(name, sizeof(name), "%s", k8s_jstr2(made, "metadata", "name"));
    json_decref(made);
    printf("mldiagnosticsconnection.diagon.gke.io/%s created\n", name);
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", name);
    if (!o->wait) {
        printf("Follow it with:  kubectl mldiag status %s -n %s\n", name, ns);
        return 0;
    }
    return follow(cl, o, path);
}

static int list(struct k8s_client *cl, const struct opts *o, const char *ns)
{
    char path[600];
    if (o->all_namespaces)
        snprintf(path, sizeof(path), "/apis/diagon.gke.io/v1alpha1/mldiagnosticsconnections");
    else
        snprintf(path, sizeof(path), PATH_FMT, ns);
    json_t *l = NULL;
    struct k8s_error err = {0};
    if (k8s_get_json(cl, path, NULL, 30000, &l, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    if (!json_array_size(json_object_get(l, "items")))
        fprintf(stderr, "No captures found%s%s.\n", o->all_namespaces ? "" : " in namespace ",
                o->all_namespaces ? "" : ns);
    else
        md_show_list(stdout, l, o->all_namespaces, now_s());
    json_decref(l);
    return 0;
}

static int status(struct k8s_client *cl, const char *ns, const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), PATH_FMT "/%s", ns, name);
    json_t *obj = NULL;
    struct k8s_error err = {0};
    if (k8s_get_json(cl, path, NULL, 30000, &obj, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    md_show_status(stdout, obj, now_s());
    json_decref(obj);
    return 0;
}

/* The subcommands, one row each. */
static const struct command {
    const char *name;
    const struct k8s_flag *flags;
    int positionals; /* exactly this many */
    const char *usage;
} commands[] = {
    {"capture", capture_flags, 1, "kubectl mldiag capture TYPE/NAME --storage LOCATION [flags]"},
    {"list", list_flags, 0, "kubectl mldiag list [-A] [flags]"},
    {"status", status_flags, 1, "kubectl mldiag status NAME [flags]"},
};

static const struct command *command_of(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

static int run(const struct command *cmd, struct opts *o, const char *const *pos)
{
    struct k8s_client *cl = NULL;
    struct k8s_config cfg = {0};
    struct k8s_error err = {0};
    if (open_client(o, &cl, &cfg, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
    }
    const char *ns = namespace_of(o, &cfg);
    int r = !strcmp(cmd->name, "capture") ? capture(cl, o, ns, pos[0])
            : !strcmp(cmd->name, "list")  ? list(cl, o, ns)
                                          : status(cl, ns, pos[0]);
    k8s_client_free(cl);
    k8s_config_done(&cfg);
    return r;
}

int main(int argc, char **argv)
{
    const struct command *cmd = argc > 1 ? command_of(argv[1]) : NULL;
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
        printf("kubectl-mldiag %s\n", MLD_VERSION);
        return 0;
    }
    if (!cmd) {
        fprintf(stderr, "error: unknown command \"%s\" for \"kubectl mldiag\"\n\n%s", argv[1],
                usage);
        return 2;
    }
    struct opts o = {.poll_ns = K8S_NSEC_PER_SEC,
                     .c = {.duration_ns = 10 * K8S_NSEC_PER_SEC,
                           .port = 9999,
                           .max = MD_UNSET,
                           .host_level = MD_UNSET,
                           .device_level = MD_UNSET,
                           .python_level = MD_UNSET,
                           .delay_ns = MD_UNSET}};
    const struct opts defaults = o;
    const char *pos[1] = {NULL};
    int npos;
    struct k8s_error err = {0};
    int r = parse(cmd->flags, &o, argc, argv, pos, 1, &npos, &err);
    if (r == 1) {
        printf("Usage:\n  %s\n\nFlags:\n", cmd->usage);
        k8s_flags_usage(stdout, cmd->flags, &defaults);
        return 0;
    }
    if (r == 0 && npos != cmd->positionals)
        r = k8s_error_set(&err, -K8S_EINVAL, "expected %d argument%s", cmd->positionals,
                          cmd->positionals == 1 ? "" : "s");
    if (r < 0) {
        fprintf(stderr, "error: %s\nUsage:\n  %s\nSee \"kubectl mldiag %s --help\".\n", err.message,
                cmd->usage, cmd->name);
        return 2;
    }
    return run(cmd, &o, pos);
}
