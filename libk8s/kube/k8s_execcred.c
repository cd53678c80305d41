#include "k8s_execcred.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "k8s_buf.h"
#include "k8s_jget.h"

#define MAX_ARGS   64
#define MAX_ENV    64
#define MAX_OUTPUT (1 << 20)

extern char **environ;

void k8s_execcred_done(struct k8s_execcred *c)
{
    if (!c)
        return;
    if (c->token)
        explicit_bzero(c->token, strlen(c->token));
    free(c->token);
    if (c->key_pem)
        explicit_bzero(c->key_pem, c->key_len);
    free(c->cert_pem);
    free(c->key_pem);
    memset(c, 0, sizeof(*c));
}

/* The command: relative with a '/' is the kubeconfig's directory's. */
static char *command_path(const char *kubeconfig, const char *cmd)
{
    char *out = NULL;
    if (cmd[0] == '/' || !strchr(cmd, '/'))
        return strdup(cmd);
    const char *slash = strrchr(kubeconfig, '/');
    if (asprintf(&out, "%.*s/%s", slash ? (int)(slash - kubeconfig) : 1, slash ? kubeconfig : ".",
                 cmd) < 0)
        return NULL;
    return out;
}

/* Our environment, then the user's env entries, then KUBERNETES_EXEC_INFO;
 * the strings it adds into *owned (to free). */
static int environment(const json_t *exec, const char *api, char **envp, char **owned,
                       size_t *n_owned)
{
    size_t n = 0;
    for (char **e = environ; *e && n < MAX_ENV * 4; e++)
        if (strncmp(*e, "KUBERNETES_EXEC_INFO=", 21))
            envp[n++] = *e;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(exec, "env"), i, v)
    {
        if (i >= MAX_ENV || !k8s_jstr(v, "name"))
            break;
        if (asprintf(&owned[*n_owned], "%s=%s", k8s_jstr(v, "name"),
                     k8s_jstr(v, "value") ? k8s_jstr(v, "value") : "") < 0)
            return -K8S_ENOMEM;
        envp[n++] = owned[(*n_owned)++];
    }
    if (asprintf(&owned[*n_owned],
                 "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
                 "\"spec\":{\"interactive\":false}}",
                 api) < 0)
        return -K8S_ENOMEM;
    envp[n++] = owned[(*n_owned)++];
    envp[n] = NULL;
    return 0;
}

/* Spawn argv with envp, its stdout into out; the exit status in *status. */
static int spawn(char **argv, char **envp, struct k8s_buf *out, int *status)
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) < 0)
        return -K8S_EIO;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
    pid_t pid;
    int r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (r != 0) {
        close(fd[0]);
        errno = r;
        return -K8S_EIO;
    }
    char buf[4096];
    ssize_t got;
    while ((got = read(fd[0], buf, sizeof(buf))) > 0 || (got < 0 && errno == EINTR))
        if (got > 0 &&
            (out->len + (size_t)got > MAX_OUTPUT || k8s_buf_append(out, buf, (size_t)got) < 0))
            break;
    close(fd[0]);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

/* status.token, or status.clientCertificateData and clientKeyData. */
static int take(const char *kubeconfig, const char *cmd, const char *text, size_t len,
                struct k8s_execcred *c, struct k8s_error *reterr)
{
    json_t *o = json_loadb(text, len, 0, NULL);
    const json_t *st = json_object_get(o, "status");
    const char *token = k8s_jstr(st, "token"), *cert = k8s_jstr(st, "clientCertificateData"),
               *key = k8s_jstr(st, "clientKeyData");
    int r = 0;
    if (!o || strcmp(k8s_jstr(o, "kind") ? k8s_jstr(o, "kind") : "", "ExecCredential"))
        r = k8s_error_set(reterr, -K8S_EINVAL,
                          "%s: exec plugin %s: its output is not an ExecCredential", kubeconfig,
                          cmd);
    else if (token && *token)
        r = (c->token = strdup(token)) ? 0 : -K8S_ENOMEM;
    else if (cert && key) {
        c->cert_pem = strdup(cert), c->key_pem = strdup(key);
        c->cert_len = strlen(cert), c->key_len = strlen(key);
        r = c->cert_pem && c->key_pem ? 0 : -K8S_ENOMEM;
    } else
        r = k8s_error_set(reterr, -K8S_EINVAL,
                          "%s: exec plugin %s: its ExecCredential has no token and no client "
                          "certificate",
                          kubeconfig, cmd);
    json_decref(o);
    return r;
}

static int run(const char *kubeconfig, const json_t *exec, const char *cmd, const char *api,
               struct k8s_execcred *c, struct k8s_error *reterr)
{
    char *argv[MAX_ARGS + 2], *envp[MAX_ENV * 5 + 2], *owned[MAX_ENV + 1];
    size_t n_owned = 0, argc = 0, i;
    json_t *a;
    int r = 0, status = 0;
    char *path = command_path(kubeconfig, cmd);
    argv[argc++] = path;
    json_array_foreach(json_object_get(exec, "args"), i, a)
    {
        if (argc <= MAX_ARGS && json_string_value(a))
            argv[argc++] = (char *)json_string_value(a);
    }
    argv[argc] = NULL;
    struct k8s_buf out;
    k8s_buf_init(&out, MAX_OUTPUT);
    if (!path || environment(exec, api, envp, owned, &n_owned) < 0)
        r = k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    else if (spawn(argv, envp, &out, &status) < 0)
        r = k8s_error_set(reterr, -K8S_EIO, "%s: exec plugin %s: cannot run it: %s%s%s", kubeconfig,
                          cmd, strerror(errno), k8s_jstr(exec, "installHint") ? "; " : "",
                          k8s_jstr(exec, "installHint") ? k8s_jstr(exec, "installHint") : "");
    else if (!WIFEXITED(status) || WEXITSTATUS(status))
        r = k8s_error_set(reterr, -K8S_EIO, "%s: exec plugin %s exited with status %d%s%s",
                          kubeconfig, cmd, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                          k8s_jstr(exec, "installHint") ? ": " : "",
                          k8s_jstr(exec, "installHint") ? k8s_jstr(exec, "installHint") : "");
    else
        r = take(kubeconfig, cmd, out.data ? out.data : "", out.len, c, reterr);
    k8s_buf_done(&out);
    for (i = 0; i < n_owned; i++)
        free(owned[i]);
    free(path);
    return r;
}

int k8s_execcred_run(const char *kubeconfig, const json_t *exec, struct k8s_execcred *ret,
                     struct k8s_error *reterr)
{
    const char *cmd = k8s_jstr(exec, "command"), *api = k8s_jstr(exec, "apiVersion");
    struct k8s_execcred c = {0};
    if (!cmd || !*cmd)
        return k8s_error_set(reterr, -K8S_EINVAL, "%s: the user's exec has no command", kubeconfig);
    if (!api || !*api)
        return k8s_error_set(reterr, -K8S_EINVAL, "%s: the user's exec has no apiVersion",
                             kubeconfig);
    int r = run(kubeconfig, exec, cmd, api, &c, reterr);
    if (r < 0) {
        k8s_execcred_done(&c);
        return r;
    }
    *ret = c;
    return 0;
}
