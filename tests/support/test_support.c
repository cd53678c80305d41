#include "test_support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char *ts_fixture_path(const char *rel)
{
    char *p = NULL;
    cr_assert(asprintf(&p, "%s/%s", MLD_FIXTURES, rel) > 0);
    return p;
}

char *ts_read_fixture(const char *rel, size_t *ret_len)
{
    char *path = ts_fixture_path(rel);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open fixture %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    free(path);
    if (ret_len)
        *ret_len = (size_t)n;
    return buf;
}

json_t *ts_load_json(const char *rel)
{
    size_t n;
    char *s = ts_read_fixture(rel, &n);
    json_error_t e;
    json_t *v = json_loadb(s, n, 0, &e);
    cr_assert_not_null(v, "fixture %s: %s (line %d)", rel, e.text, e.line);
    free(s);
    return v;
}

void ts_fake_start(struct ts_fake *f)
{
    int in[2], out[2];
    cr_assert(pipe(in) == 0 && pipe(out) == 0);
    char *serve = ts_fixture_path("../fakes/serve.py");
    f->pid = fork();
    cr_assert_geq(f->pid, 0);
    if (f->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl("/usr/bin/python3", "python3", "-B", serve, (char *)NULL);
        _exit(127);
    }
    free(serve);
    close(in[0]);
    close(out[1]);
    f->in = fdopen(in[1], "w");
    f->out = fdopen(out[0], "r");
    cr_assert_eq(fscanf(f->out, "%d", &f->port), 1, "the fake API server did not start");
}

void ts_fake_command(struct ts_fake *f, const char *cmd)
{
    char ok[16];
    fprintf(f->in, "%s\n", cmd);
    fflush(f->in);
    cr_assert_eq(fscanf(f->out, "%15s", ok), 1, "%s", cmd);
}

void ts_fake_stop(struct ts_fake *f)
{
    fclose(f->in); /* EOF: the fake stops */
    fclose(f->out);
    waitpid(f->pid, NULL, 0);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int ts_each_json(const char *dir_rel, const char *suffix,
                 void (*fn)(json_t *doc, const char *name, void *arg), void *arg)
{
    char *dir = ts_fixture_path(dir_rel);
    struct dirent **names;
    int n = scandir(dir, &names, NULL, by_name), done = 0;
    cr_assert_geq(n, 0, "cannot list fixtures %s", dir);
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        size_t l = strlen(name), sl = strlen(suffix);
        if (l > sl && !strcmp(name + l - sl, suffix)) {
            char *rel = NULL;
            cr_assert(asprintf(&rel, "%s/%s", dir_rel, name) > 0);
            json_t *doc = ts_load_json(rel);
            fn(doc, name, arg);
            json_decref(doc);
            free(rel);
            done++;
        }
        free(names[i]);
    }
    free(names);
    free(dir);
    return done;
}
